"""How each package's ``__init__`` publishes the names of its private modules.

Implementation lives in modules private by name (``pyinformers.cache._store``);
the package is the public path. :func:`publish` sets ``__module__`` of the
classes and functions a face re-exports to the face's name, so reprs, docs,
pickles and tracebacks of users show ``pyinformers.cache.Indexer``, the name
they import, rather than the file it happens to live in (trio does the same).

:func:`lazy_face` builds the module ``__getattr__``/``__dir__`` pair of a face
that imports its names on first use (so ``import pyinformers`` stays cheap).
Both are called at import time only; nothing here holds state.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from typing import Any


def _publish_one(value: Any, face: str) -> None:
    home = getattr(value, "__module__", None)
    if not (isinstance(home, str) and home.startswith(face + ".")):
        return
    # Only names that live in a private module below the face: a name already
    # published by a subpackage's face keeps that face as its home.
    if any(part.startswith("_") for part in home[len(face) + 1 :].split(".")) and (
        isinstance(value, type) or callable(value)
    ):
        try:
            value.__module__ = face
        except (AttributeError, TypeError):  # builtins and some C types refuse
            pass


def publish(namespace: MutableMapping[str, Any], names: Iterable[str]) -> None:
    """Give every class and function in ``names`` (defined below the face) the face's ``__module__``."""
    face = namespace["__name__"]
    for name in names:
        if name in namespace:
            _publish_one(namespace[name], face)


def lazy_face(
    face: str,
    exports: Mapping[str, str],
    namespace: MutableMapping[str, Any],
    *,
    deprecated: Mapping[str, tuple[str, str]] | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for a face whose names are imported on first use.

    ``exports`` maps a public name to the module that defines it; ``deprecated``
    maps an old name to ``(module, what to use instead)``: it still resolves,
    with a :class:`DeprecationWarning`, for one release (see CHANGELOG.rst).
    """
    old_names = dict(deprecated or {})

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            if name in old_names:
                where, instead = old_names[name]
                warnings.warn(
                    f"{face}.{name} is deprecated: use {instead}", DeprecationWarning, stacklevel=2
                )
                return getattr(importlib.import_module(where), name)
            raise AttributeError(f"module {face!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        _publish_one(value, face)
        namespace[name] = value  # later lookups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
