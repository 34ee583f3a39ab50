"""Field ownership: server-side apply and the ``managedFields`` every write records.

What kube-apiserver's field manager (structured-merge-diff under it) does,
written for plain dicts and :class:`~._schema.Shape`:

* :func:`apply` merges an applied configuration into the live object, then
  removes what the applier set last time, no longer sets, and nobody else
  owns (*prune*); a field another manager owns and the merge changes is a
  conflict (:class:`ApplyConflicts`) unless ``force`` takes it over; the
  applier then owns exactly the fields of its configuration;
* :func:`update` records what a create, update or patch changed: the manager
  gains the fields it added or modified (taking them from whoever owned them)
  and everyone loses the fields it removed;
* each manager's entry (:class:`Entry`) is keyed by its name, operation,
  subresource and, for ``Update``, the API version; its ``time`` moves when
  its write changed the object; at most ten ``Update`` entries are kept (the
  oldest merge into ``ancient-changes``).

The field sets leave out what the server owns (``apiVersion``, ``kind``,
``metadata.name``, ``uid``, ``resourceVersion`` ...) and what the endpoint
resets (``status`` through the main resource, ``spec`` through ``/status``):
``ignored`` says which, by path prefix.

Pure functions; inputs are never mutated; thread-safe.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import orjson

from pyinformers.testing.apiserver._fieldpath import (
    FieldSet,
    Path,
    field,
    from_fields_v1,
    key_element,
    path_string,
    to_fields_v1,
    value_element,
)
from pyinformers.testing.apiserver._schema import Shape

__all__ = [
    "Entry",
    "ApplyConflicts",
    "FieldManagerError",
    "apply",
    "update",
    "field_set",
    "merge",
    "compare",
    "remove_items",
    "decode_managed_fields",
    "encode_managed_fields",
    "STRIPPED",
    "MAX_UPDATE_MANAGERS",
]

MISSING: Any = type("Missing", (), {"__repr__": lambda self: "MISSING"})()

#: Paths no manager owns (exact members, not prefixes): what the server sets on every write.
STRIPPED: FieldSet = frozenset(
    {("f:apiVersion",), ("f:kind",), ("f:metadata",)}
    | {
        ("f:metadata", field(name))
        for name in (
            "name",
            "namespace",
            "creationTimestamp",
            "selfLink",
            "uid",
            "clusterName",
            "generation",
            "managedFields",
            "resourceVersion",
        )
    }
)
MAX_UPDATE_MANAGERS = 10
ANCIENT = "ancient-changes"


class FieldManagerError(ValueError):
    """An object the field manager cannot read (a list item without its key, a bad managedFields entry)."""


@dataclass(frozen=True)
class Entry:
    """One ``managedFields`` entry: who, how, when, and the fields it owns."""

    manager: str
    operation: str  # "Apply" | "Update"
    api_version: str
    fields: FieldSet
    time: str | None = None
    subresource: str = ""

    @property
    def identity(self) -> tuple[str, str, str, str]:
        """What tells entries apart: appliers are one entry whatever version they applied at."""
        version = "" if self.operation == "Apply" else self.api_version
        return (self.manager, self.operation, version, self.subresource)

    def describe(self) -> str:
        """The manager as conflict messages name it."""
        text = json.dumps(self.manager)
        if self.subresource:
            text += f" with subresource {json.dumps(self.subresource)}"
        if self.operation == "Update":
            text += f" using {self.api_version}"
        return text


class ApplyConflicts(Exception):
    """An apply would change fields other managers own; ``conflicts`` is [(entry, path)] in order."""

    def __init__(self, conflicts: list[tuple[Entry, Path]]) -> None:
        self.conflicts = conflicts
        super().__init__(self.message)

    @property
    def message(self) -> str:
        if len(self.conflicts) == 1:
            entry, path = self.conflicts[0]
            return f"Apply failed with 1 conflict: conflict with {entry.describe()}: {path_string(path)}"
        lines: list[str] = []
        by_manager: dict[str, list[Path]] = {}
        for entry, path in self.conflicts:
            by_manager.setdefault(entry.describe(), []).append(path)
        for name in sorted(by_manager):
            lines.append(f"conflicts with {name}:")
            lines.extend(f"- {path_string(p)}" for p in by_manager[name])
        return f"Apply failed with {len(self.conflicts)} conflicts: " + "\n".join(lines)

    def causes(self) -> list[dict]:
        return [
            {
                "reason": "FieldManagerConflict",
                "message": f"conflict with {entry.describe()}",
                "field": path_string(path),
            }
            for entry, path in self.conflicts
        ]


# -- walking values -----------------------------------------------------------------------


def _granular(value: Any, shape: Shape) -> bool:
    """Whether ``value`` is walked into (a non-atomic map/struct, or a set/map list)."""
    if isinstance(value, dict):
        return shape.kind in ("struct", "map", "deduced") and not shape.atomic
    if isinstance(value, list):
        return shape.kind == "list" and shape.list_type != "atomic"
    return False


def _item_element(item: Any, shape: Shape, where: Path) -> str:
    if shape.list_type == "set":
        return value_element(item)
    if not isinstance(item, dict):
        raise FieldManagerError(
            f"{path_string(where)}: expected a map as an item of an associative list"
        )
    keys = {}
    for key in shape.keys:
        if key in item:
            keys[key] = item[key]
        elif key in shape.key_defaults:
            keys[key] = shape.key_defaults[key]
        # a key field left out keys the item by the others (validation then names what is missing)
    return key_element(keys)


def _index(items: list, shape: Shape, where: Path) -> tuple[list[str], dict[str, Any]]:
    order: list[str] = []
    seen: dict[str, Any] = {}
    for item in items:
        element = _item_element(item, shape, where)
        if element in seen:
            continue
        seen[element] = item
        order.append(element)
    return order, seen


def field_set(value: Any, shape: Shape) -> set[Path]:
    """Every leaf and item ``value`` sets (structured-merge-diff's ToFieldSet)."""
    out: set[Path] = set()
    _to_set(value, shape, (), out)
    return out


def _to_set(value: Any, shape: Shape, path: Path, out: set[Path]) -> None:
    if not _granular(value, shape):
        if path:
            out.add(path)
        return
    if isinstance(value, dict):
        for name, child in value.items():
            sub = path + (field(name),)
            _to_set(child, shape.child(name, child), sub, out)
            if child is None or (isinstance(child, dict) and not child) or not shape.declares(name):
                out.add(sub)
    else:
        item_shape = shape.item()
        for item in value:
            sub = path + (_item_element(item, shape, path),)
            _to_set(item, item_shape, sub, out)
            out.add(sub)


def _empty(value: Any) -> bool:
    return value is MISSING or value is None or (isinstance(value, (dict, list)) and not value)


def _is_leaf(lhs: Any, rhs: Any, shape: Shape) -> bool:
    """Whether two present sides compare as one value (atomic, scalar, mismatched, or both empty)."""
    if lhs is None or rhs is None:
        other = rhs if lhs is None else lhs
        return other is None or not other or not _granular(other, shape)
    if type(lhs) is not type(rhs) or not _granular(lhs, shape):
        return True
    return not lhs and not rhs


def _same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, (dict, list)):
        return orjson.dumps(a, option=orjson.OPT_SORT_KEYS) == orjson.dumps(
            b, option=orjson.OPT_SORT_KEYS
        )
    return bool(a == b)


def merge(lhs: Any, rhs: Any, shape: Shape) -> Any:
    """``rhs`` merged over ``lhs``: rhs's leaves win, maps merge by key, set/map lists by item."""
    return _merge(lhs, rhs, shape, ())


def _merge(lhs: Any, rhs: Any, shape: Shape, path: Path) -> Any:
    if rhs is MISSING:
        return lhs
    if lhs is MISSING or _is_leaf(lhs, rhs, shape) or lhs is None or rhs is None:
        return rhs
    if isinstance(rhs, dict):
        out = {}
        for name, value in lhs.items():
            other = rhs.get(name, MISSING)
            out[name] = _merge(
                value,
                other,
                shape.child(name, other if other is not MISSING else value),
                path + (field(name),),
            )
        for name, value in rhs.items():
            if name not in lhs:
                out[name] = value
        return out
    return _merge_list(lhs, rhs, shape, path)


def _merge_list(lhs: list, rhs: list, shape: Shape, path: Path) -> list:
    """Merged items in structured-merge-diff's order: the live order, with the applied
    items placed where the applied configuration puts them among the items both have."""
    item_shape = shape.item()
    l_order, l_seen = _index(lhs, shape, path)
    r_order, r_seen = _index(rhs, shape, path)
    shared = [e for e in r_order if e in l_seen]
    next_shared = shared.pop(0) if shared else None
    out = []
    li = ri = 0
    while li < len(l_order) or ri < len(r_order):
        if li < len(l_order) and ri < len(r_order):
            element = l_order[li]
            if element == r_order[ri]:
                out.append(_merge(l_seen[element], r_seen[element], item_shape, path + (element,)))
                li += 1
                ri += 1
                next_shared = shared.pop(0) if shared else None
                continue
            if element in r_seen and next_shared is not None and next_shared != element:
                li += 1
                continue
        if li < len(l_order):
            element = l_order[li]
            if element not in r_seen:
                out.append(l_seen[element])
                li += 1
                continue
            if ri >= len(r_order):
                li += 1  # already placed with the applied items
                continue
        element = r_order[ri]
        out.append(
            _merge(l_seen.get(element, MISSING), r_seen[element], item_shape, path + (element,))
        )
        ri += 1
        if next_shared is not None and next_shared == element:
            next_shared = shared.pop(0) if shared else None
    return out


@dataclass
class Comparison:
    added: set[Path]
    modified: set[Path]
    removed: set[Path]


def compare(lhs: Any, rhs: Any, shape: Shape) -> Comparison:
    """What changed from ``lhs`` to ``rhs``; a container that appears or goes counts as a path too."""
    result = Comparison(set(), set(), set())
    _compare(lhs, rhs, shape, (), result)
    return result


def _compare(lhs: Any, rhs: Any, shape: Shape, path: Path, c: Comparison) -> None:
    if lhs is rhs or (
        lhs is not MISSING and rhs is not MISSING and isinstance(lhs, (dict, list)) and lhs == rhs
    ):
        # Unchanged below (the common case of an update; ``==`` takes 1 for true, which a
        # schema-checked object never mixes up in one field).
        return
    if lhs is MISSING or rhs is MISSING:
        _whole(
            rhs if lhs is MISSING else lhs, shape, path, c.added if lhs is MISSING else c.removed
        )
        return
    if _is_leaf(lhs, rhs, shape):
        if not path:
            return
        if lhs is MISSING:
            c.added.add(path)
        elif rhs is MISSING:
            c.removed.add(path)
        elif not _same(lhs, rhs):
            c.modified.add(path)
        return
    sample = lhs if isinstance(lhs, (dict, list)) else rhs
    if isinstance(sample, dict):
        left = lhs if isinstance(lhs, dict) else {}
        right = rhs if isinstance(rhs, dict) else {}
        for name in list(left) + [n for n in right if n not in left]:
            a, b = left.get(name, MISSING), right.get(name, MISSING)
            _compare(
                a, b, shape.child(name, b if b is not MISSING else a), path + (field(name),), c
            )
    else:
        l_order, l_seen = _index(lhs if isinstance(lhs, list) else [], shape, path)
        r_order, r_seen = _index(rhs if isinstance(rhs, list) else [], shape, path)
        item_shape = shape.item()
        for element in l_order + [e for e in r_order if e not in l_seen]:
            _compare(
                l_seen.get(element, MISSING),
                r_seen.get(element, MISSING),
                item_shape,
                path + (element,),
                c,
            )
    if path:
        if lhs is MISSING:
            c.added.add(path)
        elif rhs is MISSING:
            c.removed.add(path)


def _whole(value: Any, shape: Shape, path: Path, out: set[Path]) -> None:
    """Every node of a value that appeared (or went) whole: its leaves, and each container too."""
    if path:
        out.add(path)
    if not value or not _granular(value, shape):
        return
    if isinstance(value, dict):
        for name, child in value.items():
            _whole(child, shape.child(name, child), path + (field(name),), out)
    else:
        item_shape = shape.item()
        for item in value:
            _whole(item, item_shape, path + (_item_element(item, shape, path),), out)


def _trie(paths: Iterable[Path]) -> dict:
    """paths as nested dicts; a member's node has the key ``None`` set."""
    root: dict = {}
    for path in paths:
        node = root
        for element in path:
            node = node.setdefault(element, {})
        node[None] = True
    return root


def remove_items(value: Any, paths: Iterable[Path], shape: Shape) -> Any:
    """``value`` without the members of ``paths`` (structured-merge-diff's RemoveItems).

    A map or list emptied by the removal goes too (there it becomes null, which the
    server then drops from the stored object).
    """
    trie = _trie(paths)
    if not trie:
        return value
    out = _remove(value, trie, shape, ())
    return {} if out is MISSING else out


def _remove(value: Any, trie: dict, shape: Shape, path: Path) -> Any:
    if not _granular(value, shape) or not value:
        return value
    if isinstance(value, dict):
        out = {}
        for name, child in value.items():
            node = trie.get(field(name))
            if node is None:
                out[name] = child
            elif None not in node:
                kept = _remove(child, node, shape.child(name, child), path + (field(name),))
                if kept is not MISSING:
                    out[name] = kept
        return out if out else MISSING
    items = []
    item_shape = shape.item()
    for item in value:
        element = _item_element(item, shape, path)
        node = trie.get(element)
        if node is None:
            items.append(item)
        elif None not in node:
            kept = _remove(item, node, item_shape, path + (element,))
            items.append(kept if kept is not MISSING else {})
    return items if items else MISSING


def _ensure_named(paths: Iterable[Path], shape: Shape) -> set[Path]:
    """``paths`` plus every declared struct field with members below it (so pruning can take
    a struct whose owned fields all went)."""
    out = set(paths)
    for path in list(out):
        node = shape
        for i, element in enumerate(path[:-1]):
            if element.startswith("f:"):
                name = element[2:]
                if node.declares(name):
                    out.add(path[: i + 1])
                node = node.child(name, {})
            else:
                node = node.item()
    return out


# -- managers ------------------------------------------------------------------------------


def decode_managed_fields(raw: Any) -> list[Entry]:
    """``metadata.managedFields`` as entries; FieldManagerError when malformed."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise FieldManagerError("managedFields must be a list")
    entries = []
    for item in raw:
        if not isinstance(item, dict):
            raise FieldManagerError("a managedFields entry must be an object")
        operation = item.get("operation")
        if operation not in ("Apply", "Update"):
            raise FieldManagerError(f"managedFields: unsupported operation {operation!r}")
        if item.get("fieldsType", "FieldsV1") != "FieldsV1":
            raise FieldManagerError(
                f"managedFields: unsupported fieldsType {item.get('fieldsType')!r}"
            )
        try:
            fields = from_fields_v1(item.get("fieldsV1") or {})
        except ValueError as exc:
            raise FieldManagerError(f"managedFields: {exc}") from None
        entries.append(
            Entry(
                manager=str(item.get("manager") or ""),
                operation=operation,
                api_version=str(item.get("apiVersion") or ""),
                fields=fields,
                time=_rfc3339(item.get("time")),
                subresource=str(item.get("subresource") or ""),
            )
        )
    return entries


def _rfc3339(value: Any) -> str | None:
    """A time as the server writes it back (seconds, UTC, ``Z``); None for none or garbage."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=datetime.timezone.utc)
    return parsed.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def encode_managed_fields(entries: Iterable[Entry]) -> list[dict]:
    """Entries as ``metadata.managedFields``, in kube-apiserver's order (Apply first, then by time, name...)."""

    def order(e: Entry) -> tuple:
        return (e.operation, e.time or "", e.manager, e.api_version, e.subresource)

    out = []
    for e in sorted(entries, key=order):
        item: dict[str, Any] = {
            "manager": e.manager,
            "operation": e.operation,
            "apiVersion": e.api_version,
        }
        if e.time is not None:
            item["time"] = e.time
        item["fieldsType"] = "FieldsV1"
        item["fieldsV1"] = to_fields_v1(e.fields)
        if e.subresource:
            item["subresource"] = e.subresource
        out.append(item)
    return out


def _filter(paths: Iterable[Path], ignored: Callable[[Path], bool]) -> frozenset[Path]:
    return frozenset(p for p in paths if p not in STRIPPED and not ignored(p))


def _without_managed_fields(obj: Mapping[str, Any] | None) -> Any:
    if obj is None:
        return MISSING
    meta = obj.get("metadata")
    if isinstance(meta, dict) and "managedFields" in meta:
        return dict(obj, metadata={k: v for k, v in meta.items() if k != "managedFields"})
    return obj


def _take_from_others(
    managers: dict[tuple, Entry],
    me: tuple,
    changes: Comparison,
    ignored: Callable[[Path], bool],
    *,
    force: bool,
) -> None:
    """Others lose what they owned and the write changed (a conflict unless forced) or removed."""
    taken = _filter(changes.modified | changes.added, ignored)
    removed = _filter(changes.removed, ignored)
    conflicts: list[tuple[Entry, Path]] = []
    for identity, entry in managers.items():
        if identity == me:
            continue
        for path in sorted(entry.fields & taken, key=_path_order):
            conflicts.append((entry, path))
    if conflicts and not force:
        conflicts.sort(key=lambda c: (json.dumps(c[0].identity), _path_order(c[1])))
        raise ApplyConflicts(conflicts)
    for identity, entry in list(managers.items()):
        if identity == me:
            continue
        kept = entry.fields - taken - removed
        if not kept:
            del managers[identity]
        elif kept != entry.fields:
            managers[identity] = replace(entry, fields=kept)


def _path_order(path: Path) -> tuple:
    return tuple(({"f": 0, "k": 1, "v": 2, "i": 3}.get(e[:1], 4), e[2:]) for e in path)


def apply(
    live: Mapping[str, Any] | None,
    config: Mapping[str, Any],
    entries: Iterable[Entry],
    *,
    manager: str,
    force: bool,
    api_version: str,
    shape: Shape,
    now: str,
    subresource: str = "",
    ignored: Callable[[Path], bool] = lambda path: False,
) -> tuple[Any, list[Entry]]:
    """Apply ``config`` as ``manager``: (the new object without managedFields, the new entries).

    ``live`` is the stored object (None to create). Raises :class:`ApplyConflicts`.
    When nothing changes, the object equals ``live`` and the entries are the old ones.
    """
    managers = {e.identity: e for e in entries}
    live_value = _without_managed_fields(live)
    base = live_value if live_value is not MISSING else {}
    merged = _merge(base, dict(config), shape, ())
    me = (manager, "Apply", "", subresource)
    previous = managers.get(me)
    # Inside the merge the applier owns its whole configuration (metadata.name included, which
    # keeps metadata from being pruned); what the server owns is left out of what is recorded.
    applied = frozenset(p for p in field_set(config, shape) if not ignored(p))
    managers[me] = Entry(
        manager, "Apply", api_version, applied, previous.time if previous else None, subresource
    )
    if previous is not None and previous.fields:
        merged = _prune(merged, managers, previous.fields, shape)
    _take_from_others(managers, me, compare(base, merged, shape), ignored, force=force)
    recorded = _filter(applied, ignored)
    if recorded:
        managers[me] = replace(managers[me], fields=recorded)
    else:
        del managers[me]
    if not _same(base, merged):
        if me in managers:
            managers[me] = replace(managers[me], time=now)
    return merged, list(managers.values())


def _prune(merged: Any, managers: dict[tuple, Entry], last: FieldSet, shape: Shape) -> Any:
    """Remove what the applier owned before, no longer applies, and nobody else owns."""
    last_e = _ensure_named(last, shape)
    pruned = remove_items(merged, last_e, shape)
    managed: set[Path] = set()
    for entry in managers.values():
        managed |= entry.fields
    merged_set = _ensure_named(field_set(merged, shape), shape)
    pruned_set = _ensure_named(field_set(pruned, shape), shape)
    pruned = remove_items(merged, merged_set - (pruned_set | _ensure_named(managed, shape)), shape)
    pruned_set = _ensure_named(field_set(pruned, shape), shape)
    return remove_items(merged, (merged_set - pruned_set) & last_e, shape)


def update(
    live: Mapping[str, Any] | None,
    new: Mapping[str, Any],
    entries: Iterable[Entry],
    *,
    manager: str,
    api_version: str,
    shape: Shape,
    now: str,
    subresource: str = "",
    zero: Mapping[str, Any] | None = None,
    ignored: Callable[[Path], bool] = lambda path: False,
) -> list[Entry]:
    """The entries after ``manager`` wrote ``new`` over ``live`` (None: a create, compared
    with ``zero``, the kind's empty object) with a create, update or non-apply patch."""
    managers = {e.identity: e for e in entries}
    base = _without_managed_fields(live)
    if base is MISSING:
        base = dict(zero or {})
    changes = compare(base, _without_managed_fields(new), shape)
    me = (manager, "Update", api_version, subresource)
    _take_from_others(managers, ("", "current-operation", "", ""), changes, ignored, force=True)
    mine = _filter((changes.added | changes.modified) - changes.removed, ignored)
    if mine:
        previous = managers.get(me)
        owned = (previous.fields if previous else frozenset()) | mine
        managers[me] = Entry(manager, "Update", api_version, owned, now, subresource)
    return _cap(list(managers.values()))


def _cap(entries: list[Entry]) -> list[Entry]:
    updates = [e for e in entries if e.operation == "Update"]
    if len(updates) <= MAX_UPDATE_MANAGERS:
        return entries
    updates.sort(key=lambda e: e.time or "")
    excess = updates[: len(updates) - MAX_UPDATE_MANAGERS + 1]
    keep = [e for e in entries if e not in excess]
    ancient = next((e for e in excess if e.manager == ANCIENT), None)
    fields: frozenset[Path] = frozenset().union(*(e.fields for e in excess))
    base = ancient or excess[-1]
    keep.append(Entry(ANCIENT, "Update", base.api_version, fields, None, ""))
    return keep
