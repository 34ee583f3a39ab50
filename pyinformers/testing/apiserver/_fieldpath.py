"""Field paths and field sets, and their ``FieldsV1`` encoding (what ``managedFields`` hold).

A *path* names one node of an object: a tuple of path elements, each spelled
as a ``FieldsV1`` key --

* ``f:<name>`` a field of a struct or a key of a map,
* ``k:<json>`` an item of an associative list by its key fields (a JSON
  object with the key fields sorted by name: ``k:{"name":"app"}``),
* ``v:<json>`` an item of a set by its value (``v:"example.com/finalizer"``),
* ``i:<n>`` an item of a list by its position (only inside atomic lists,
  which field sets never enter).

A *field set* is a frozenset of paths: the nodes a manager owns. Set algebra is
Python's; a node and its descendants are independent members (owning
``spec.replicas`` does not mean owning ``spec``). :func:`to_fields_v1` writes a
set as the nested ``FieldsV1`` object the API server stores (``"."`` marks a
node that is itself a member and also has members below it), with keys in the
order kube-apiserver writes them (fields, then keys, then values, then
indexes); :func:`from_fields_v1` reads one back. :func:`path_string` spells a
path as conflict messages do: ``.spec.containers[name="app"].image``.

Pure functions over immutable values; thread-safe (the memo dicts are only
ever replaced or cleared whole, which the GIL keeps consistent).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

__all__ = [
    "Path",
    "FieldSet",
    "field",
    "key_element",
    "value_element",
    "index_element",
    "to_fields_v1",
    "from_fields_v1",
    "path_string",
]

Path = tuple[str, ...]
FieldSet = frozenset[Path]

_ORDER = {"f": 0, "k": 1, "v": 2, "i": 3}


def _json(value: Any) -> str:
    """JSON as Go writes it in a path element: compact, keys sorted, non-ASCII kept."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def field(name: str) -> str:
    """The element of a struct field or map key ``name``."""
    return "f:" + name


def key_element(keys: Mapping[str, Any]) -> str:
    """The element of the associative-list item whose key fields are ``keys``."""
    return "k:" + _json(dict(keys))


def value_element(value: Any) -> str:
    """The element of the set item ``value``."""
    return "v:" + _json(value)


def index_element(index: int) -> str:
    return f"i:{index}"


def _sort_key(element: str) -> tuple[int, str]:
    return (_ORDER.get(element[:1], 4), element[2:])


#: Most writes re-encode and re-read entries that did not change: both directions are
#: memoised (bounded; the cached objects are shared and must not be mutated).
_CACHE_LIMIT = 4096
_ENCODED: dict[frozenset, dict] = {}
_DECODED: dict[bytes, frozenset] = {}


def to_fields_v1(paths: Iterable[Path]) -> dict:
    """The ``FieldsV1`` object of a field set (empty set: ``{}``); do not mutate the answer."""
    key = paths if isinstance(paths, frozenset) else frozenset(paths)
    cached = _ENCODED.get(key)
    if cached is None:
        if len(_ENCODED) >= _CACHE_LIMIT:
            _ENCODED.clear()
        cached = _ENCODED[key] = _encode(key)
    return cached


def _encode(paths: frozenset) -> dict:
    tree: dict = {}
    members: set[Path] = set()
    for path in paths:
        node = tree
        for element in path:
            node = node.setdefault(element, {})
        members.add(path)
    return _emit(tree, (), members)


def _emit(tree: dict, prefix: Path, members: set[Path]) -> dict:
    out: dict = {}
    if prefix and tree and prefix in members:
        out["."] = {}
    for element in sorted(tree, key=_sort_key):
        out[element] = _emit(tree[element], prefix + (element,), members)
    return out


def from_fields_v1(doc: Any) -> FieldSet:
    """The field set a ``FieldsV1`` object encodes; ValueError names what is malformed."""
    if not isinstance(doc, dict):
        raise ValueError(f"FieldsV1 must be an object, not {type(doc).__name__}")
    key = orjson.dumps(doc)
    cached = _DECODED.get(key)
    if cached is None:
        out: set[Path] = set()
        _read(doc, (), out)
        if len(_DECODED) >= _CACHE_LIMIT:
            _DECODED.clear()
        cached = _DECODED[key] = frozenset(out)
    return cached


def _read(node: dict, prefix: Path, out: set[Path]) -> None:
    for element, child in node.items():
        if element == ".":
            if prefix:
                out.add(prefix)
            continue
        if element[:2] not in ("f:", "k:", "v:", "i:"):
            raise ValueError(f"unexpected path element {element!r} in FieldsV1")
        if element[:2] in ("k:", "v:"):
            try:
                json.loads(element[2:])
            except ValueError:
                raise ValueError(f"path element {element!r}: its value is not JSON") from None
        if not isinstance(child, dict):
            raise ValueError(f"path element {element!r}: expected an object")
        path = prefix + (element,)
        if child:
            _read(child, path, out)
        else:
            out.add(path)


def _go_value(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (dict, list)):
        return _json(value)
    return str(value)


def path_string(path: Path) -> str:
    """A path as kube-apiserver spells it in conflicts: ``.spec.ports[port=80,protocol="TCP"]``."""
    parts = []
    for element in path:
        kind, text = element[:1], element[2:]
        if kind == "f":
            parts.append("." + text)
        elif kind == "k":
            keys = json.loads(text)
            parts.append("[" + ",".join(f"{k}={_go_value(v)}" for k, v in keys.items()) + "]")
        elif kind == "v":
            parts.append(f"[={_go_value(json.loads(text))}]")
        else:
            parts.append(f"[{text}]")
    return "".join(parts)
