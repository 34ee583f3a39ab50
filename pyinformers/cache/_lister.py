"""Listers: the read side of an informer's cache, the way reconcile reads the world.

A :class:`Lister` wraps an :class:`~pyinformers.cache._store.Indexer` and
answers "get this object", "list these objects" and "list by index" from
memory. Results may be slightly stale (the cache trails the API server by
the watch latency); a reconcile that acts on them and gets a ``409
Conflict`` simply retries.

**Listers return the cached objects themselves, not copies.** They are
shared with every other reader and with the informer; mutating one corrupts
the cache and its indexes for everyone. Deep-copy
(:func:`pyinformers.api.meta.deep_copy`) before changing anything.

Namespaces cannot be swapped or forgotten. For a namespaced resource the
namespace is named, never positional: ``lister.namespace(ns).get(name)``
(client-go's ``lister.Foos(ns).Get(name)``) or ``lister.get(name,
namespace=ns)``; leaving it out raises ``ValueError`` at once instead of
answering None, which a reconcile would read as "deleted". For a
cluster-scoped resource, ``lister.get(name)``; a namespace there is an error
too. (A Lister made from a bare indexer, without a resource, cannot tell and
accepts both.)

Thread-safety: a Lister holds no state of its own; every call is one
locked read of the indexer, safe from any thread.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from typing import Any, Generic

from pyinformers.api._resource import ObjectT, Resource
from pyinformers.api._selectors import LabelSelector, as_label_selector
from pyinformers.cache._store import NAMESPACE_INDEX

__all__ = ["Lister", "NamespaceLister"]


class Lister(Generic[ObjectT]):
    """Read-only, indexed access to an informer's cache (see the module docstring).

    Generic in the object type of its resource, for type checkers only: the
    lister of a ``Resource[CronJob]`` returns ``CronJob`` s (TypedDicts: the
    cached dicts themselves).

    :param indexer: the cache (an :class:`~pyinformers.cache._store.Indexer`).
    :param resource: the resource cached; its scope decides whether reads
        need a namespace. Informers and the factory always pass it.
    """

    __slots__ = ("_indexer", "_resource", "_namespaced")

    def __init__(self, indexer: Any, *, resource: Resource[ObjectT] | None = None) -> None:
        self._indexer = indexer
        self._resource = resource
        self._namespaced: bool | None = None if resource is None else bool(resource.namespaced)

    @property
    def indexer(self) -> Any:
        return self._indexer

    @property
    def resource(self) -> Resource[ObjectT] | None:
        return self._resource

    def _what(self) -> str:
        return str(self._resource) if self._resource is not None else "this resource"

    def _check_namespace(self, namespace: str | None, *, required: bool) -> None:
        if namespace is not None and not isinstance(namespace, str):
            raise TypeError(f"namespace must be a string, got {namespace!r}")
        if self._namespaced is False and namespace:
            raise ValueError(f"{self._what()} is cluster-scoped: no namespace (got {namespace!r})")
        if required and self._namespaced and not namespace:
            raise ValueError(
                f"{self._what()} is namespaced: say which namespace, "
                "lister.namespace(ns).get(name) or lister.get(name, namespace=ns)"
            )

    def namespace(self, namespace: str) -> NamespaceLister[ObjectT]:
        """The objects of one namespace: ``lister.namespace("default").get("web")``."""
        if not namespace or not isinstance(namespace, str):
            raise ValueError(f"Lister.namespace needs a namespace name, got {namespace!r}")
        self._check_namespace(namespace, required=True)
        return NamespaceLister(self, namespace)

    def get(self, name: str, *, namespace: str | None = None) -> ObjectT | None:
        """The cached object ``namespace/name`` (``name`` when cluster-scoped), or None. Do not mutate it.

        Raises ValueError when the namespace is missing for a namespaced
        resource, or given for a cluster-scoped one.
        """
        if not name or not isinstance(name, str):
            raise ValueError(f"Lister.get needs a non-empty name, got {name!r}")
        if "/" in name:
            raise ValueError(
                f"an object name has no '/' (got {name!r}); pass namespace= separately"
            )
        self._check_namespace(namespace, required=True)
        return self._indexer.get_by_key(f"{namespace}/{name}" if namespace else name)

    def list(
        self,
        *,
        namespace: str | None = None,
        selector: str | Mapping[str, Any] | LabelSelector | None = None,
    ) -> builtins.list[ObjectT]:
        """Cached objects, in every namespace or one, optionally matching a label selector.

        ``selector`` is anything :func:`~pyinformers.api._selectors.as_label_selector`
        accepts (string, object form, LabelSelector). Uses the namespace index
        when the indexer has one; otherwise filters a full listing.
        Returns a new list of shared objects: do not mutate them.
        """
        self._check_namespace(namespace, required=False)
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

    def by_index(self, index: str, value: str) -> builtins.list[ObjectT]:
        """Cached objects filed under ``value`` in the named index. Do not mutate them."""
        return self._indexer.by_index(index, value)

    def __repr__(self) -> str:
        return f"<Lister of {self._indexer!r}>"


class NamespaceLister(Generic[ObjectT]):
    """The cached objects of one namespace (from :meth:`Lister.namespace`)."""

    __slots__ = ("_lister", "_namespace")

    def __init__(self, lister: Lister[ObjectT], namespace: str) -> None:
        self._lister = lister
        self._namespace = namespace

    @property
    def namespace(self) -> str:
        return self._namespace

    def get(self, name: str) -> ObjectT | None:
        """The cached object ``name`` in this namespace, or None. Do not mutate it."""
        return self._lister.get(name, namespace=self._namespace)

    def list(
        self, selector: str | Mapping[str, Any] | LabelSelector | None = None
    ) -> builtins.list[ObjectT]:
        """The cached objects of this namespace matching ``selector``. Do not mutate them."""
        return self._lister.list(namespace=self._namespace, selector=selector)

    def by_index(self, index: str, value: str) -> builtins.list[ObjectT]:
        """The cached objects of this namespace filed under ``value`` in the named index.

        controller-runtime's ``List(ctx, &list, InNamespace(ns),
        MatchingFields{index: value})``: the index function need not put the
        namespace into its values. Do not mutate the objects.
        """
        namespace = self._namespace
        return [o for o in self._lister.by_index(index, value) if _namespace_of(o) == namespace]

    def __repr__(self) -> str:
        return f"<NamespaceLister {self._namespace!r} of {self._lister!r}>"


def _namespace_of(obj: Any) -> str | None:
    md = obj.get("metadata")
    return md.get("namespace") if md else None
