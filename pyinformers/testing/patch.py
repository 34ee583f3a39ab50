"""Patches the in-process API server applies: JSON merge patch, JSON patch, strategic merge.

* :func:`merge_patch` -- RFC 7386: maps merge recursively, ``null`` deletes a
  key, every other value (lists included) replaces.
* :func:`json_patch` -- RFC 6902: ``add``, ``remove``, ``replace``, ``move``,
  ``copy``, ``test`` with RFC 6901 pointers (``~0``/``~1`` escapes, ``-`` to
  append).
* :func:`strategic_merge_patch` -- Kubernetes' strategic merge patch reduced to
  a merge patch: lists are replaced whole instead of merged by their patch
  merge keys; ``$patch``/``$retainKeys`` directives are rejected clearly
  rather than misapplied.

All functions return a new document and never mutate their inputs; bad
patches raise :class:`PatchError` (the HTTP layer answers 422 or 400).
Pure functions; thread-safe.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["PatchError", "merge_patch", "json_patch", "strategic_merge_patch"]


class PatchError(ValueError):
    """A patch that cannot be applied to the document (or is malformed)."""


def merge_patch(target: Any, patch: Any) -> Any:
    """Apply an RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            result[key] = merge_patch(result.get(key), value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """Apply a strategic merge patch as a merge patch (lists replace; no directives)."""
    _reject_directives(patch, "")
    return merge_patch(target, patch)


def _reject_directives(value: Any, path: str) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and key.startswith("$"):
                raise PatchError(
                    f"strategic merge patch directive {key!r} at {path or '/'} is not supported by "
                    "pyinformers.testing (use a JSON patch or a merge patch)"
                )
            _reject_directives(item, f"{path}/{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _reject_directives(item, f"{path}/{index}")


def _parse_pointer(pointer: Any) -> list[str]:
    if not isinstance(pointer, str):
        raise PatchError(f"a JSON pointer must be a string, not {pointer!r}")
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PatchError(f"JSON pointer {pointer!r} must start with '/'")
    return [part.replace("~1", "/").replace("~0", "~") for part in pointer[1:].split("/")]


def _list_index(container: list, token: str, pointer: str, *, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return len(container)
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        raise PatchError(f"{pointer}: {token!r} is not a list index")
    index = int(token)
    limit = len(container) if allow_end else len(container) - 1
    if index > limit:
        raise PatchError(f"{pointer}: index {index} is out of range")
    return index


def _parent(doc: Any, parts: list[str], pointer: str) -> Any:
    node = doc
    for token in parts[:-1]:
        if isinstance(node, dict):
            if token not in node:
                raise PatchError(f"{pointer}: path element {token!r} does not exist")
            node = node[token]
        elif isinstance(node, list):
            node = node[_list_index(node, token, pointer, allow_end=False)]
        else:
            raise PatchError(f"{pointer}: cannot descend into a {type(node).__name__}")
    return node


def _get(doc: Any, pointer: str) -> Any:
    parts = _parse_pointer(pointer)
    if not parts:
        return doc
    parent = _parent(doc, parts, pointer)
    token = parts[-1]
    if isinstance(parent, dict):
        if token not in parent:
            raise PatchError(f"{pointer}: no such member")
        return parent[token]
    if isinstance(parent, list):
        return parent[_list_index(parent, token, pointer, allow_end=False)]
    raise PatchError(f"{pointer}: cannot index a {type(parent).__name__}")


def _add(doc: Any, pointer: str, value: Any) -> Any:
    parts = _parse_pointer(pointer)
    if not parts:
        return value
    parent = _parent(doc, parts, pointer)
    token = parts[-1]
    if isinstance(parent, dict):
        parent[token] = value
    elif isinstance(parent, list):
        parent.insert(_list_index(parent, token, pointer, allow_end=True), value)
    else:
        raise PatchError(f"{pointer}: cannot add to a {type(parent).__name__}")
    return doc


def _remove(doc: Any, pointer: str) -> tuple[Any, Any]:
    parts = _parse_pointer(pointer)
    if not parts:
        raise PatchError("cannot remove the whole document")
    parent = _parent(doc, parts, pointer)
    token = parts[-1]
    if isinstance(parent, dict):
        if token not in parent:
            raise PatchError(f"{pointer}: no such member to remove")
        return doc, parent.pop(token)
    if isinstance(parent, list):
        return doc, parent.pop(_list_index(parent, token, pointer, allow_end=False))
    raise PatchError(f"{pointer}: cannot remove from a {type(parent).__name__}")


def json_patch(target: Any, operations: Any) -> Any:
    """Apply an RFC 6902 JSON patch (a list of operations), all or nothing."""
    if not isinstance(operations, list):
        raise PatchError("a JSON patch must be a list of operations")
    doc = copy.deepcopy(target)
    for number, op in enumerate(operations):
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise PatchError(f"operation {number}: needs 'op' and 'path'")
        kind, path = op["op"], op["path"]
        if kind in ("add", "replace", "test") and "value" not in op:
            raise PatchError(f"operation {number} ({kind}): needs 'value'")
        if kind == "add":
            doc = _add(doc, path, copy.deepcopy(op["value"]))
        elif kind == "remove":
            doc, _ = _remove(doc, path)
        elif kind == "replace":
            _get(doc, path)  # must exist
            if _parse_pointer(path):
                doc, _ = _remove(doc, path)
            doc = _add(doc, path, copy.deepcopy(op["value"]))
        elif kind in ("move", "copy"):
            source = op.get("from")
            if source is None:
                raise PatchError(f"operation {number} ({kind}): needs 'from'")
            if kind == "move":
                if isinstance(path, str) and isinstance(source, str) and path.startswith(source + "/"):
                    raise PatchError(f"operation {number}: cannot move {source} into itself")
                doc, value = _remove(doc, source)
            else:
                value = copy.deepcopy(_get(doc, source))
            doc = _add(doc, path, value)
        elif kind == "test":
            if _get(doc, path) != op["value"]:
                raise PatchError(f"operation {number}: test failed at {path}")
        else:
            raise PatchError(f"operation {number}: unknown op {kind!r}")
    return doc
