"""Patches the in-process API server applies: JSON merge patch, JSON patch, strategic merge.

* :func:`merge_patch` -- RFC 7386: maps merge recursively, ``null`` deletes a
  key, every other value (lists included) replaces.
* :func:`json_patch` -- RFC 6902: ``add``, ``remove``, ``replace``, ``move``,
  ``copy``, ``test`` with RFC 6901 pointers (``~0``/``~1`` escapes, ``-`` to
  append).
* :func:`strategic_merge_patch` -- Kubernetes' strategic merge patch: lists
  of the built-in types merge by their merge keys (:data:`MERGE_KEYS`), with
  the ``$patch``, ``$setElementOrder``, ``$deleteFromPrimitiveList`` and
  ``$retainKeys`` directives (what ``kubectl apply``, ``set image`` and
  ``edit`` send).

All functions return a new document and never mutate their inputs; bad
patches raise :class:`PatchError` (the HTTP layer answers 422 or 400).
Pure functions; thread-safe.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = [
    "PatchError",
    "UnknownDirective",
    "merge_patch",
    "json_patch",
    "strategic_merge_patch",
    "MERGE_KEYS",
]


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


#: Merge keys of the lists that strategic merge patch merges instead of replacing, by field
#: name (the built-in types' ``patchMergeKey`` tags; the same name means the same key in
#: every built-in type pyinformers.testing serves). ``None``: a list of scalars merged as a set.
MERGE_KEYS: dict[str, str | None] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "env": "name",
    "imagePullSecrets": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "ports": "containerPort",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
    "conditions": "type",
    "ownerReferences": "uid",
    "finalizers": None,
}
_SET_ORDER = "$setElementOrder/"
_DELETE_FROM_LIST = "$deleteFromPrimitiveList/"


class UnknownDirective(PatchError):
    """A ``$patch`` directive the server does not know (the real server answers 500)."""


def strategic_merge_patch(target: Any, patch: Any, merge_keys: dict | None = None) -> Any:
    """Apply a Kubernetes strategic merge patch.

    Maps merge as in a merge patch; lists named in ``merge_keys`` (default
    :data:`MERGE_KEYS`) merge by their key: a patch element replaces-by-merge
    the element with the same key, an element with ``"$patch": "delete"``
    removes it, a new element goes in front (as the real server places it),
    ``{"$patch": "replace"}`` replaces the whole list; ``$setElementOrder/<list>``
    orders the result; ``$deleteFromPrimitiveList/<list>`` removes scalars;
    ``"$patch": "replace"``/``"delete"`` in a map replaces/deletes that map;
    ``$retainKeys`` keeps only the keys it names. Other lists are replaced.
    """
    keys = MERGE_KEYS if merge_keys is None else merge_keys
    return _smp_map(target if isinstance(target, dict) else {}, patch, keys)


def _go_map(value: Any) -> str:
    """A map as Go's %v prints it (sorted keys), as the real server's messages show patches."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{_go_map(v)}" for k, v in sorted(value.items())) + "]"
    if isinstance(value, list):
        return "[" + " ".join(_go_map(v) for v in value) + "]"
    return "<nil>" if value is None else str(value)


def _directive(patch: dict) -> str | None:
    directive = patch.get("$patch")
    if directive is not None and directive not in ("replace", "delete", "merge"):
        raise UnknownDirective(f"unknown patch type: {directive} in map: {_go_map(patch)}")
    return directive


def _smp_map(target: dict, patch: Any, keys: dict) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    directive = _directive(patch)
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return None
    result = dict(target)
    retain = patch.get("$retainKeys")
    orders = {k[len(_SET_ORDER) :]: v for k, v in patch.items() if k.startswith(_SET_ORDER)}
    for key, value in patch.items():
        if key.startswith("$"):
            if key.startswith(_DELETE_FROM_LIST):
                field = key[len(_DELETE_FROM_LIST) :]
                if isinstance(result.get(field), list) and isinstance(value, list):
                    result[field] = [v for v in result[field] if v not in value]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            current = result.get(key)
            merged = _smp_map(current if isinstance(current, dict) else {}, value, keys)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list) and key in keys:
            existing = result.get(key)
            result[key] = _smp_list(
                existing if isinstance(existing, list) else [], value, keys[key], keys
            )
        else:
            result[key] = copy.deepcopy(value)
    for field, order in orders.items():
        if isinstance(result.get(field), list) and isinstance(order, list):
            result[field] = _apply_order(result[field], order, keys.get(field))
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _smp_list(target: list, patch: list, merge_key: str | None, keys: dict) -> list:
    for item in patch:
        if isinstance(item, dict) and _directive(item) == "replace" and len(item) == 1:
            return [copy.deepcopy(i) for i in patch if i is not item]
    if merge_key is None:  # a set of scalars
        result = list(target)
        for item in patch:
            if item not in result:
                result.append(copy.deepcopy(item))
        return result
    result = [copy.deepcopy(i) for i in target]
    added = []
    for item in patch:
        if not isinstance(item, dict) or merge_key not in item:
            raise PatchError(f"map: {item!r} does not contain declared merge key: {merge_key}")
        index = next(
            (
                i
                for i, old in enumerate(result)
                if isinstance(old, dict) and old.get(merge_key) == item[merge_key]
            ),
            None,
        )
        if _directive(item) == "delete":
            if index is not None:
                del result[index]
            continue
        if index is None:
            added.append(_smp_map({}, item, keys))
        else:
            result[index] = _smp_map(result[index], item, keys)
    return added + result


def _apply_order(items: list, order: list, merge_key: str | None) -> list:
    """``items`` sorted by their position in ``order`` (items it does not name keep theirs, after)."""

    def ident(item: Any) -> Any:
        return item.get(merge_key) if merge_key and isinstance(item, dict) else item

    position: dict[str, int] = {}
    for i, entry in enumerate(order):
        position.setdefault(repr(ident(entry)), i)
    named = sorted(
        (i for i in items if repr(ident(i)) in position), key=lambda i: position[repr(ident(i))]
    )
    return named + [i for i in items if repr(ident(i)) not in position]


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
                if (
                    isinstance(path, str)
                    and isinstance(source, str)
                    and path.startswith(source + "/")
                ):
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
