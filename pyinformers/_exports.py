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
    deprecated: Mapping[str, str] | None = None,
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for a face whose names are imported on first use.

    ``exports`` maps a public name to the module that defines it; ``deprecated``
    maps an old name to the dotted public path of what replaces it
    (``"pyinformers.manager.Manager"``): the old name still resolves to that
    object, with a :class:`DeprecationWarning`, for one release (see CHANGELOG.rst).
    """
    old_names = dict(deprecated or {})

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            if name in old_names:
                instead = old_names[name]
                warnings.warn(
                    f"{face}.{name} is deprecated: use {instead}", DeprecationWarning, stacklevel=2
                )
                where, _, new_name = instead.rpartition(".")
                return getattr(importlib.import_module(where), new_name)
            raise AttributeError(f"module {face!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        _publish_one(value, face)
        namespace[name] = value  # later lookups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__


def renamed_method(new: Callable[..., Any], old_name: str) -> Callable[..., Any]:
    """A method kept under its 0.1 name for one release: it warns, then calls ``new``.

    Use in a class body: ``shutdown = renamed_method(stop, "shutdown")``.
    """

    def old(*args: Any, **kwargs: Any) -> Any:
        warnings.warn(
            f"{old_name}() is deprecated: use {new.__name__}()", DeprecationWarning, stacklevel=2
        )
        return new(*args, **kwargs)

    old.__name__ = old.__qualname__ = old_name
    old.__doc__ = f"Deprecated since 0.2: use :meth:`{new.__name__}`."
    return old
