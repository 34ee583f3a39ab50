"""The RFC 6902 JSON Patch that turns one JSON document into another.

A mutating admission webhook answers with a patch, not an object: the API
server applies it to the object it sent. :func:`json_patch` computes one from
the object before and after a handler changed it, so handlers can simply edit
a copy.

The diff is small and always correct, not minimal: objects are compared key
by key (``remove`` for keys gone, ``add`` for new ones, recursion where both
sides hold a container of the same type), lists element by element over their
common length, then elements are appended (``add`` at ``/-``) or removed from
the end (highest index first, so every index is valid when applied). Any other
change is a ``replace``. JSON's types are kept apart where Python's ``==``
would merge them: ``True`` is not ``1`` and ``1`` is not ``1.0``.

Pure functions, thread-safe; the inputs are never modified.
"""

from __future__ import annotations

from typing import Any

__all__ = ["json_patch", "pointer"]


def pointer(path: tuple[Any, ...]) -> str:
    """The JSON Pointer (RFC 6901) of ``path``: ``("metadata", "a/b")`` -> ``/metadata/a~1b``."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)


def _same_scalar(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _diff(old: Any, new: Any, path: tuple[Any, ...], ops: list[dict[str, Any]]) -> None:
    if isinstance(old, dict) and isinstance(new, dict):
        for key in old:
            if key not in new:
                ops.append({"op": "remove", "path": pointer((*path, key))})
        for key, value in new.items():
            if key in old:
                _diff(old[key], value, (*path, key), ops)
            else:
                ops.append({"op": "add", "path": pointer((*path, key)), "value": value})
        return
    if isinstance(old, list) and isinstance(new, list):
        common = min(len(old), len(new))
        for index in range(common):
            _diff(old[index], new[index], (*path, index), ops)
        for index in range(len(old) - 1, common - 1, -1):
            ops.append({"op": "remove", "path": pointer((*path, index))})
        for value in new[common:]:
            ops.append({"op": "add", "path": pointer((*path, "-")), "value": value})
        return
    if isinstance(old, (dict, list)) or isinstance(new, (dict, list)) or not _same_scalar(old, new):
        ops.append({"op": "replace", "path": pointer(path), "value": new})


def json_patch(old: Any, new: Any) -> list[dict[str, Any]]:
    """The operations that turn ``old`` into ``new`` (``[]`` when they are equal as JSON).

    Values in the operations are shared with ``new``, not copied: serialise
    the patch before changing ``new`` again.
    """
    ops: list[dict[str, Any]] = []
    _diff(old, new, (), ops)
    return ops
