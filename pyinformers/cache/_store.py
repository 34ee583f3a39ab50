"""The indexed, thread-safe object store behind every informer (client-go's ``Indexer``).

An :class:`Indexer` maps keys (``namespace/name``, or ``name`` for
cluster-scoped objects) to objects and maintains any number of named
*indexes*. An index is defined by an *index function* ``obj -> list[str]``
that returns the values an object is filed under (several values per object
are fine: a Pod could be filed under each of its volumes' claim names). For
each index the store keeps ``value -> set of keys``, so "all Pods on node n1"
or "all children of owner uid u" is a dictionary lookup, not a scan.

Invariants, holding whenever the lock is free:

* ``_items`` holds exactly the objects added and not deleted since the last
  :meth:`Indexer.replace`;
* for every index ``name``, key ``k`` is filed under ``_indices[name][v]`` if
  and only if ``k`` is in ``_items`` and ``v`` is one of the values the index
  function returns for ``_items[k]``; no value maps to an empty entry. An
  entry is the key itself while it is the only one filed there (most values
  of an owner index: one child per owner) and a set of two or more keys
  otherwise, which saves a set (about 200 bytes) per such value.

An index function that raises (or returns a bare string) for one object:
without ``on_index_error`` the write raises and leaves the store unchanged;
with it (what an informer passes), the failure is reported and the object is
stored all the same, filed under no value of that index (found by key, not by
that index), so one odd object never drops out of the cache.

Thread-safety: every method may be called from any thread. One lock guards
the items and the indexes together, so a reader never sees an index entry for
an object that is not in the store (no "torn" index); lookups by key
(:meth:`Indexer.get`, :meth:`Indexer.get_by_key`) need no lock at all. Writes
and index reads take a contended lock by handing the GIL over rather than
sleeping on it (:mod:`pyinformers._locking`), so a reflector writing while
workers read listers never falls into a lock convoy. Index functions run
under that lock: they must be quick, pure functions of the object and must
not call back into the store.

Objects are stored exactly as given, never copied, and handed back the same
way: **an object in the store must never be mutated**, by the writer that
added it or by any reader. Mutating one would corrupt the indexes silently
(the store files it under the values computed when it was added) and change
what every other reader sees. To change an object, :func:`~pyinformers.api.meta.deep_copy`
it first.
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pyinformers._locking import acquire_contended
from pyinformers.api.meta import object_key
from pyinformers.cache._tombstone import DeletedFinalStateUnknown

__all__ = [
    "IndexFunc",
    "KeyFunc",
    "Indexer",
    "NAMESPACE_INDEX",
    "OWNER_UID_INDEX",
    "namespace_index",
    "controller_owner_uid_index",
    "default_indexers",
]

IndexFunc = Callable[[Any], "list[str]"]
KeyFunc = Callable[[Any], str]

#: Name of the built-in index by ``metadata.namespace``.
NAMESPACE_INDEX = "namespace"
#: Name of the built-in index by the UID of the controller owner reference.
OWNER_UID_INDEX = "controller-owner-uid"


def namespace_index(obj: Mapping[str, Any]) -> list[str]:
    """Index function: ``[metadata.namespace]``, or ``[]`` for a cluster-scoped object."""
    md = obj.get("metadata")
    ns = md.get("namespace") if md else None
    return [ns] if ns else []


def controller_owner_uid_index(obj: Mapping[str, Any]) -> list[str]:
    """Index function: ``[uid]`` of the owner reference with ``controller: true``, or ``[]``.

    ``by_index(OWNER_UID_INDEX, owner_uid)`` lists the children a controller
    owns; the child's own reference gives its owner, so both directions are O(1).
    """
    md = obj.get("metadata")
    refs = md.get("ownerReferences") if md else None
    if refs:
        for ref in refs:
            if ref.get("controller") is True:
                owner_uid = ref.get("uid")
                return [owner_uid] if owner_uid else []
    return []


def default_indexers() -> dict[str, IndexFunc]:
    """A fresh dict with both built-in indexes (namespace and controller owner UID)."""
    return {NAMESPACE_INDEX: namespace_index, OWNER_UID_INDEX: controller_owner_uid_index}


_NO_VALUES: tuple[str, ...] = ()


def _file(index: dict[str, Any], value: str, key: str) -> None:
    """File ``key`` under ``value``."""
    keys = index.get(value)
    if keys is None:
        index[value] = key
    elif type(keys) is str:
        if keys != key:
            index[value] = {keys, key}
    else:
        keys.add(key)


def _unfile(index: dict[str, Any], value: str, key: str) -> None:
    """Take ``key`` out of ``value``'s entry (dropping an entry left empty)."""
    keys = index.get(value)
    if keys is None:
        return
    if type(keys) is str:
        if keys == key:
            del index[value]
        return
    keys.discard(key)
    if len(keys) == 1:
        index[value] = next(iter(keys))


def _keys(entry: Any) -> Any:
    """The keys of an index entry, as a collection (empty for None)."""
    if entry is None:
        return ()
    return (entry,) if type(entry) is str else entry


def _values(name: str, fn: IndexFunc, obj: Any) -> tuple[str, ...]:
    """The distinct values ``fn`` files ``obj`` under, checked for shape."""
    return _normalize(name, fn(obj))


def _normalize(name: str, vals: Any) -> tuple[str, ...]:
    """An index function's result as a tuple of distinct values (TypeError for a bare string).

    The error names the index, never the value (it may come from a Secret's data).
    """
    if not vals:
        return _NO_VALUES
    t = type(vals)
    if t is list or t is tuple:
        if len(vals) == 1:
            hash(vals[0])  # an unhashable value fails here, before the store changes
            return (vals[0],)
    elif isinstance(vals, str):
        raise TypeError(
            f"index function {name!r} returned a string; it must return a list of strings"
        )
    return tuple(dict.fromkeys(vals))


# Sentinel: an object's old index values are unknown (the function failed on it), so the key
# is looked for under every value of that index.
_UNKNOWN: tuple[str, ...] = ("<unknown>",)


class Indexer:
    """A thread-safe key -> object store with named indexes; see the module docstring.

    ``indexers`` maps index names to index functions; ``key_func`` computes
    an object's key (default :func:`~pyinformers.api.meta.object_key`).
    :meth:`delete` also accepts a :class:`DeletedFinalStateUnknown` tombstone
    and deletes by its key.
    """

    def __init__(
        self,
        indexers: Mapping[str, IndexFunc] | None = None,
        *,
        key_func: KeyFunc = object_key,
        on_index_error: Callable[[str, Any, BaseException], None] | None = None,
    ) -> None:
        self._key_func = key_func
        # (index name, object, error): see the module docstring.
        self._on_index_error = on_index_error
        self._lock = threading.Lock()
        # key -> object; see the module docstring for the invariants it shares with _indices.
        self._items: dict[str, Any] = {}
        # index name -> index function
        self._indexers: dict[str, IndexFunc] = {}
        # index name -> value -> the key, or set of keys, the function files under value (never empty)
        self._indices: dict[str, dict[str, Any]] = {}
        self._resource_version = ""
        if indexers:
            self.add_indexers(indexers)

    # ------------------------------------------------------------------ keys

    def _key(self, obj: Any) -> str:
        if isinstance(obj, DeletedFinalStateUnknown):
            return obj.key
        return self._key_func(obj)

    # ------------------------------------------------------------------ index maintenance (lock held)

    def _update_indices(self, key: str, old: Any, new: Any) -> None:
        """Move ``key`` from ``old``'s index values to ``new``'s (either may be None).

        New values are computed before anything changes, so an index function
        that raises (without ``on_index_error``) leaves the store unchanged.
        """
        indexers = self._indexers
        if not indexers:
            return
        changes = []
        for name, fn in indexers.items():
            if new is not None:
                raw_old: Any = _UNKNOWN
                try:
                    raw_new = fn(new)
                    if old is not None:
                        raw_old = fn(old)
                        if raw_new == raw_old and type(raw_new) is list:
                            continue  # the common update: same values, nothing to move
                    new_vals = _normalize(name, raw_new)
                except Exception as error:
                    new_vals = self._new_values_failed(name, fn, new, error)
                if old is None:
                    old_vals = _NO_VALUES
                elif raw_old is _UNKNOWN:  # fn(old) was not reached, or failed
                    old_vals = self._old_values(name, fn, old)
                else:
                    try:
                        old_vals = _normalize(name, raw_old)
                    except TypeError:
                        old_vals = _UNKNOWN
            else:
                new_vals = _NO_VALUES
                old_vals = self._old_values(name, fn, old)
            if old_vals is _UNKNOWN or old_vals != new_vals:
                changes.append((self._indices[name], old_vals, new_vals))
        for index, old_vals, new_vals in changes:
            if old_vals is _UNKNOWN:
                old_vals = tuple(v for v, keys in index.items() if key in _keys(keys))
            for v in old_vals:
                if v not in new_vals:
                    _unfile(index, v, key)
            for v in new_vals:
                _file(index, v, key)

    def _new_values_failed(
        self, name: str, fn: IndexFunc, obj: Any, error: Exception
    ) -> tuple[str, ...]:
        """The index function failed on the object being stored (or on the one it replaces).

        Re-raise without ``on_index_error``; otherwise report a failure on
        ``obj`` itself and file it under no value.
        """
        if self._on_index_error is None:
            raise error
        try:
            values = _normalize(name, fn(obj))
        except Exception as own_error:
            self._on_index_error(name, obj, own_error)
            return _NO_VALUES
        return values  # it was the replaced object's values that failed: handled by _old_values

    @staticmethod
    def _old_values(name: str, fn: IndexFunc, obj: Any) -> tuple[str, ...]:
        """The values ``obj`` is filed under, or :data:`_UNKNOWN` when the function fails on it now."""
        try:
            return _normalize(name, fn(obj))
        except Exception:
            return _UNKNOWN

    def _index_values(self, name: str, fn: IndexFunc, obj: Any) -> tuple[str, ...]:
        """``obj``'s values in index ``name`` for a bulk build (replace, add_indexers)."""
        try:
            return _normalize(name, fn(obj))
        except Exception as error:
            if self._on_index_error is None:
                raise
            self._on_index_error(name, obj, error)
            return _NO_VALUES

    # ------------------------------------------------------------------ writes

    def add(self, obj: Any) -> None:
        """Insert or overwrite the object under its key (same as :meth:`update`)."""
        self.put(self._key_func(obj), obj)

    update = add

    def put(self, key: str, obj: Any) -> Any | None:
        """Store ``obj`` under ``key`` and return the object it replaced, or None.

        ``key`` must be what this store's key function gives for ``obj``: the
        informer computes it once per event (the DeltaFIFO needs it too) and
        hands it here, so the event's write is one lock and one dict update
        (the fast lane, docs/informers.rst "The path of one event").
        """
        lock = self._lock
        if not lock.acquire(False):
            acquire_contended(lock)
        try:
            old = self._items.get(key)
            self._update_indices(key, old, obj)
            self._items[key] = obj
            return old
        finally:
            lock.release()

    def delete(self, obj: Any) -> None:
        """Remove the object with ``obj``'s key (a tombstone works too); absent keys are ignored."""
        key = self._key(obj)
        lock = self._lock
        if not lock.acquire(False):
            acquire_contended(lock)
        try:
            old = self._items.get(key)
            if old is None:
                return
            self._update_indices(key, old, None)
            del self._items[key]
        finally:
            lock.release()

    def replace(self, objects: Iterable[Any], resource_version: str = "") -> None:
        """Atomically make the store hold exactly ``objects`` (a relist).

        The new items and indexes are built without the lock, then swapped in,
        so readers are not blocked while a large list is indexed; they see the
        old contents or the new, never a mix.
        """
        while True:
            with self._lock:
                indexers = dict(self._indexers)
            items: dict[str, Any] = {}
            for obj in objects if isinstance(objects, (list, tuple)) else list(objects):
                items[self._key(obj)] = obj
            indices = {name: self._build_index(name, fn, items) for name, fn in indexers.items()}
            with self._lock:
                if self._indexers.keys() != indexers.keys():
                    objects = list(items.values())
                    continue  # an index was added meanwhile: rebuild with it
                self._items = items
                self._indices = indices
                self._resource_version = resource_version
                return

    def _build_index(self, name: str, fn: IndexFunc, items: Mapping[str, Any]) -> dict[str, Any]:
        """``{index value: entry}`` of ``items`` under one index function (a relist, a new index)."""
        index: dict[str, Any] = {}
        for key, obj in items.items():
            for v in self._index_values(name, fn, obj):
                _file(index, v, key)
        return index

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        """Add indexes; objects already in the store are indexed at once.

        Raises ValueError if a name is already taken (nothing is added then).
        """
        with self._lock:
            taken = sorted(set(indexers) & set(self._indexers))
            if taken:
                raise ValueError(f"indexer(s) {taken} already exist")
            built = {
                name: self._build_index(name, fn, self._items) for name, fn in indexers.items()
            }
            for name, fn in indexers.items():
                self._indexers[name] = fn
                self._indices[name] = built[name]

    # ------------------------------------------------------------------ reads

    def get(self, obj: Any) -> Any | None:
        """The stored object with ``obj``'s key, or None."""
        return self._items.get(self._key(obj))

    def get_by_key(self, key: str) -> Any | None:
        """The stored object under ``key``, or None. Do not mutate it.

        Takes no lock: one ``dict.get`` on ``_items``, which writers change one
        key at a time and :meth:`replace` swaps whole, sees the object before or
        after a concurrent write, never a torn state (the indexes are not read).
        """
        return self._items.get(key)

    def list(self) -> builtins.list[Any]:
        """Every stored object (a new list of the shared objects; do not mutate them)."""
        with self._lock:
            return list(self._items.values())

    def list_keys(self) -> builtins.list[str]:
        """Every key in the store."""
        with self._lock:
            return list(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def _index(self, name: str) -> dict[str, Any]:
        try:
            return self._indices[name]
        except KeyError:
            raise KeyError(f"no index named {name!r} (have {sorted(self._indices)})") from None

    def index(self, name: str, obj: Any) -> builtins.list[Any]:
        """Objects sharing at least one of ``obj``'s values in index ``name``."""
        with self._lock:
            index = self._index(name)
            vals = _values(name, self._indexers[name], obj)
            if len(vals) == 1:
                keys: Iterable[str] = _keys(index.get(vals[0]))
            else:
                union: set[str] = set()
                for v in vals:
                    union.update(_keys(index.get(v)))
                keys = union
            items = self._items
            return [items[k] for k in keys]

    def by_index(self, name: str, value: str) -> builtins.list[Any]:
        """Objects filed under ``value`` in index ``name`` (KeyError for an unknown index)."""
        lock = self._lock
        if not lock.acquire(False):
            acquire_contended(lock)
        try:
            keys = self._index(name).get(value)
            if keys is None:
                return []
            items = self._items
            if type(keys) is str:
                return [items[keys]]
            return [items[k] for k in keys]
        finally:
            lock.release()

    def index_keys(self, name: str, value: str) -> builtins.list[str]:
        """Keys filed under ``value`` in index ``name``."""
        with self._lock:
            return list(_keys(self._index(name).get(value)))

    def list_index_func_values(self, name: str) -> builtins.list[str]:
        """Every value that at least one object is filed under in index ``name``."""
        with self._lock:
            return list(self._index(name))

    @property
    def indexers(self) -> dict[str, IndexFunc]:
        """A copy of the index name -> index function mapping."""
        with self._lock:
            return dict(self._indexers)

    @property
    def resource_version(self) -> str:
        """The resource version given to the last :meth:`replace` ("" before any)."""
        return self._resource_version

    def __repr__(self) -> str:
        return f"<Indexer objects={len(self._items)} indexes={sorted(self._indexers)}>"
