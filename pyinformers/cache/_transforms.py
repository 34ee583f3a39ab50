"""Transforms: functions applied to every object before an informer stores it.

A transform receives an object freshly decoded from the API server (nobody
else holds it yet) and returns the object to cache. It runs on the reflector
thread for every listed and watched object, so it must be cheap; it may
modify its argument in place. An informer calls it exactly once per decoded
object (listed or watched); it should still be idempotent, so that an object
that already looks transformed passes through unchanged.

:func:`drop_managed_fields` is the informer factory's default: server-side
apply's ``metadata.managedFields`` are about 40% of a cached Pod and no
controller reads them. :func:`share_metadata_strings` is what the factory adds
for metadata-only informers: it makes the strings that repeat between objects
(namespaces, labels, owner references) one object each. :func:`share_strings`
does the same for every short string of an object, spec and status too: an
opt-in, since it doubles the cost of decoding an object (docs/performance.rst).

Both share through one process-wide table of two bounded generations, not
:func:`sys.intern`: interned strings are immortal on CPython 3.12.0-3.12.5,
so interning a timestamp there would keep it for the life of the process.
A string stays in the table while objects keep bringing it (it moves to the
young generation each time it is seen), and leaves it two generations after
the last one; the objects holding it keep it as long as they live.
Thread-safety: the transforms run on several reflector threads at once; the
table's dict operations are atomic, and a race can only cost some sharing
(two equal strings where one would do), never change a value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["drop_managed_fields", "chain", "share_metadata_strings", "share_strings"]

#: Strings longer than this are left alone (they rarely repeat: messages, certificates, data).
_SHARED_VALUE_LENGTH = 64
#: Entries of one generation of the string table: bounds the strings it keeps alive to
#: about 2 x 8,192 x 100 bytes, whatever the objects bring.
_GENERATION = 8192


class _StringTable:
    """Equal strings as one object: two generations of at most :data:`_GENERATION` entries.

    The two dicts are created once and never replaced (a rotation moves the
    young entries into the old dict), so callers may keep ``young.get``.
    """

    __slots__ = ("young", "old")

    def __init__(self) -> None:
        self.young: dict[str, str] = {}
        self.old: dict[str, str] = {}

    def share(self, value: str) -> str:
        """The table's string equal to ``value`` (``value`` itself, kept, when it has none)."""
        shared = self.young.get(value)
        return self.miss(value) if shared is None else shared

    def miss(self, value: str) -> str:
        """:meth:`share` for a ``value`` the young generation does not hold."""
        shared = self.old.get(value, value)
        young = self.young
        young[value] = shared
        if len(young) >= _GENERATION:
            old = self.old
            old.clear()
            old.update(young)
            young.clear()
        return shared


_TABLE = _StringTable()
_share = _TABLE.share
_young_get = _TABLE.young.get
_miss = _TABLE.miss


def drop_managed_fields(obj: Any) -> Any:
    """Remove ``metadata.managedFields`` from ``obj`` (in place) and return it.

    Objects without metadata, or without managed fields, pass through
    unchanged; anything that is not a dict (a tombstone, say) too.
    """
    try:
        metadata = obj["metadata"]
        if "managedFields" in metadata:
            del metadata["managedFields"]
    except (KeyError, TypeError):
        pass
    return obj


def chain(*transforms: Callable[[Any], Any] | None) -> Callable[[Any], Any]:
    """One transform applying ``transforms`` left to right (``None`` entries are skipped)."""
    steps = tuple(t for t in transforms if t is not None)
    for step in steps:
        if not callable(step):
            raise TypeError(f"a transform must be callable, got {step!r}")
    if len(steps) == 1:
        return steps[0]

    def chained(obj: Any) -> Any:
        for step in steps:
            obj = step(obj)
        return obj

    chained.__name__ = "chain(" + ", ".join(getattr(s, "__name__", repr(s)) for s in steps) + ")"
    return chained


def share_metadata_strings(obj: Any) -> Any:
    """Share the strings of ``obj``'s metadata that repeat between objects (in place); return ``obj``.

    The object's kind and apiVersion, its namespace, generateName and
    creationTimestamp, label and annotation keys and short values, and every
    string of its owner references become one shared string each, instead of
    one copy per cached object. Unique strings (name, uid, resourceVersion)
    are left alone. Measured on metadata-only Pods of a ReplicaSet: 2.3 KB ->
    1.4 KB of live memory per object. The strings are equal, so nothing a
    reader can see changes. Anything that is not a dict with a metadata dict
    passes through.
    """
    try:
        metadata = obj["metadata"]
        kind, api_version = obj.get("kind"), obj.get("apiVersion")
        if type(kind) is str:
            obj["kind"] = _share(kind)
        if type(api_version) is str:
            obj["apiVersion"] = _share(api_version)
        for field in ("namespace", "generateName", "creationTimestamp"):
            value = metadata.get(field)
            if type(value) is str:
                metadata[field] = _share(value)
        for field in ("labels", "annotations"):
            pairs = metadata.get(field)
            if pairs:
                metadata[field] = {
                    _share(k) if type(k) is str else k: _share(v)
                    if type(v) is str and len(v) <= _SHARED_VALUE_LENGTH
                    else v
                    for k, v in pairs.items()
                }
        for ref in metadata.get("ownerReferences") or ():
            for key, value in ref.items():
                if type(value) is str:
                    ref[key] = _share(value)
    except (KeyError, TypeError, AttributeError):
        pass
    return obj


def share_strings(obj: Any) -> Any:
    """Share every short string of ``obj`` (in place, at any depth) with equal ones already cached; return ``obj``.

    String values of at most 64 characters anywhere in the object (spec and
    status included: images, pull policies, selectors, condition types and
    reasons, timestamps) become one object each across the cache; longer
    ones, dict keys (the JSON decoder already shares the short ones) and
    other values are left alone. Measured on the Pods of ``make bench``:
    a cached Pod's RSS falls by about a third (0.68x), and decoding one
    costs about twice as much, which is why it is an opt-in: chain it
    after the default, ``chain(drop_managed_fields, share_strings)``, as
    ``Manager(cache_transform=...)`` or a factory's ``transform``. Values
    stay equal, so nothing a reader can see changes; sharing an
    object twice changes nothing more.
    """
    if type(obj) is dict or type(obj) is list:
        _share_node(obj)
    return obj


def _share_node(node: dict[str, Any] | list[Any]) -> None:
    """:func:`share_strings` of one dict or list and, depth first, of the containers in it."""
    slots: Any = node.items() if type(node) is dict else enumerate(node)
    for slot, value in slots:
        kind = type(value)
        if kind is str:
            shared = _young_get(value)
            if shared is None:
                if len(value) > _SHARED_VALUE_LENGTH:
                    continue
                shared = _miss(value)
            if shared is not value:
                node[slot] = shared
        elif kind is dict or kind is list:
            _share_node(value)
