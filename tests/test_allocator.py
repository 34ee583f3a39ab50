"""Handing the C allocator's free memory back: a no-op where glibc is not the C library."""

from __future__ import annotations

import os
import platform

import pytest

import pyinformers._allocator as allocator


def test_it_does_nothing_where_the_c_library_is_not_glibc(monkeypatch):
    monkeypatch.setattr(allocator, "_trim", allocator._UNRESOLVED)
    monkeypatch.setattr(platform, "libc_ver", lambda: ("musl", "1.2"))
    assert allocator.trim_free_memory() is False
    assert allocator._trim is None  # resolved once, to nothing


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc only"
)
def test_on_glibc_it_returns_free_pages_that_free_keeps():
    # 32 MB in 4 KB blocks: malloc's heap, below its mmap threshold and above pymalloc's sizes.
    blocks = [bytearray(4096) for _ in range(8_192)]
    fence = bytearray(4096)  # above them on the heap: free() alone cannot shrink the heap's top
    del blocks
    before = _rss_bytes()
    assert allocator.trim_free_memory() is True
    assert before - _rss_bytes() > 16 << 20  # most of the 32 MB went back
    del fence
