"""Listers: the read side of an informer's cache, the way reconcile reads the world.

A :class:`Lister` wraps an :class:`~pyinformers.cache.store.Indexer` and
answers "get this object", "list these objects" and "list by index" from
memory. Results may be slightly stale (the cache trails the API server by
the watch latency); a reconcile that acts on them and gets a ``409
Conflict`` simply retries.

**Listers return the cached objects themselves, not copies.** They are
shared with every other reader and with the informer; mutating one corrupts
the cache and its indexes for everyone. Deep-copy
(:func:`pyinformers.api.meta.deep_copy`) before changing anything.

Thread-safety: a Lister holds no state of its own; every call is one
locked read of the indexer, safe from any thread.
"""

from __future__ import annotations

from typing import Any, Mapping

from pyinformers.api.selectors import LabelSelector, as_label_selector
from pyinformers.cache.store import NAMESPACE_INDEX

__all__ = ["Lister"]


class Lister:
    """Read-only, indexed access to an informer's cache (see the module docstring)."""

    __slots__ = ("_indexer",)

    def __init__(self, indexer: Any) -> None:
        self._indexer = indexer

    @property
    def indexer(self) -> Any:
        return self._indexer

    def get(self, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        """The cached object ``namespace/name`` (``name`` when cluster-scoped), or None. Do not mutate it."""
        if not name:
            raise ValueError("Lister.get needs a non-empty name")
        return self._indexer.get_by_key(f"{namespace}/{name}" if namespace else name)

    def list(
        self,
        namespace: str | None = None,
        selector: "str | Mapping[str, Any] | LabelSelector | None" = None,
    ) -> list[dict[str, Any]]:
        """Cached objects, optionally in one namespace and matching a label selector.

        ``selector`` is anything :func:`~pyinformers.api.selectors.as_label_selector`
        accepts (string, object form, LabelSelector). Uses the namespace index
        when the indexer has one; otherwise filters a full listing.
        Returns a new list of shared objects: do not mutate them.
        """
        sel = as_label_selector(selector)
        if namespace:
            try:
                objs = self._indexer.by_index(NAMESPACE_INDEX, namespace)
            except KeyError:
                objs = [o for o in self._indexer.list() if _namespace_of(o) == namespace]
        else:
            objs = self._indexer.list()
        if sel.empty:
            return objs
        matches = sel.matches
        out = []
        for o in objs:
            md = o.get("metadata")
            if matches(md.get("labels") if md else None):
                out.append(o)
        return out

    def by_index(self, index: str, value: str) -> list[dict[str, Any]]:
        """Cached objects filed under ``value`` in the named index. Do not mutate them."""
        return self._indexer.by_index(index, value)

    def __repr__(self) -> str:
        return f"<Lister of {self._indexer!r}>"


def _namespace_of(obj: Mapping[str, Any]) -> str | None:
    md = obj.get("metadata")
    return md.get("namespace") if md else None
