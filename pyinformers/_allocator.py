"""Give the C allocator's free memory back to the operating system, where it keeps it.

CPython frees a dropped cache's objects at once (reference counting), but
glibc's ``malloc`` keeps much of what it freed for reuse: large list
responses decoded while a cache filled, and the dicts of a cache dropped
when a shard moved away, stay in the process's RSS. ``malloc_trim(0)`` hands
every free page back. :func:`trim_free_memory` calls it where glibc is the C
library and does nothing elsewhere (musl and macOS return memory on their
own terms).

Cost: one walk over the allocator's free lists, milliseconds for a process
of a few hundred MB, during which other threads' ``malloc`` calls wait; the
GIL is released meanwhile. Callers use it after events that free a lot, at
most once per event (a shard's caches synced or dropped), never per object.

Thread-safety: callable from any thread.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform
from typing import Any

__all__ = ["trim_free_memory"]

_UNRESOLVED: Any = object()
_trim: Any = _UNRESOLVED


def _resolve() -> Any:
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def trim_free_memory() -> bool:
    """Return the C allocator's free pages to the OS; True when memory was returned."""
    global _trim
    if _trim is _UNRESOLVED:
        _trim = _resolve()
    if _trim is None:
        return False
    return bool(_trim(0))
