"""Several namespaces as one informer: one watch per namespace, one merged lister, nothing else cached.

A controller that may read only a few namespaces (a Role in each, no
ClusterRole) cannot watch the whole cluster; one informer per namespace
would give it as many listers to consult. :class:`MultiNamespaceInformer`
holds one :class:`~pyinformers.cache.SharedIndexInformer` per namespace and
shows them as one: handlers added to it are added to each (so they hear of
every namespace's objects), :attr:`~MultiNamespaceInformer.lister` reads the
right namespace's cache by key and concatenates the caches for lists and
index lookups, and it is synced when all of them are. Objects of the other
namespaces are never listed, watched or cached.

(controller-runtime's ``DefaultNamespaces`` and its multi-namespace cache
work the same way: one informer per namespace behind one reader.)

Reading a namespace that is not cached raises ``ValueError`` (an answer of
None would read as "deleted" to a reconcile).

Thread-safety: like the informers it holds; it keeps no mutable state of its
own after construction.
"""

from __future__ import annotations

import builtins
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pyinformers.cache import NAMESPACE_INDEX, Lister, NamespaceLister
from pyinformers.cache._memory import ESTIMATE_MAX_AGE, CacheMemory, summed

__all__ = ["MultiNamespaceInformer", "MultiNamespaceLister", "MultiRegistration", "MergedIndexer"]


class MergedIndexer:
    """The read side of several namespaces' indexers as one (what metrics and estimates read)."""

    __slots__ = ("_fixed",)

    def __init__(self, indexers: Mapping[str, Any]) -> None:
        self._fixed = dict(indexers)

    def _indexers(self) -> dict[str, Any]:
        """``{namespace: indexer}`` read now (subclasses whose set changes override it)."""
        return self._fixed

    def _for_key(self, key: str) -> Any | None:
        namespace, sep, _name = key.partition("/")
        return self._indexers().get(namespace) if sep else None

    def get_by_key(self, key: str) -> Any | None:
        indexer = self._for_key(key)
        return indexer.get_by_key(key) if indexer is not None else None

    def get(self, obj: Any) -> Any | None:
        md = obj.get("metadata") or {}
        return self.get_by_key(f"{md.get('namespace')}/{md.get('name')}")

    def list(self) -> builtins.list[Any]:
        out: builtins.list[Any] = []
        for indexer in self._indexers().values():
            out.extend(indexer.list())
        return out

    def list_keys(self) -> builtins.list[str]:
        out: builtins.list[str] = []
        for indexer in self._indexers().values():
            out.extend(indexer.list_keys())
        return out

    def by_index(self, name: str, value: str) -> builtins.list[Any]:
        if name == NAMESPACE_INDEX:
            indexer = self._indexers().get(value)
            return indexer.by_index(name, value) if indexer is not None else []
        out: builtins.list[Any] = []
        for indexer in self._indexers().values():
            out.extend(indexer.by_index(name, value))
        return out

    def index_keys(self, name: str, value: str) -> builtins.list[str]:
        out: builtins.list[str] = []
        for indexer in self._indexers().values():
            out.extend(indexer.index_keys(name, value))
        return out

    def __len__(self) -> int:
        return sum(len(indexer) for indexer in self._indexers().values())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get_by_key(key) is not None

    def __repr__(self) -> str:
        return f"<MergedIndexer namespaces={sorted(self._indexers())} objects={len(self)}>"


class MultiNamespaceLister(Lister):
    """A :class:`~pyinformers.cache.Lister` over several namespaces' caches (module docstring)."""

    __slots__ = ("_listers",)

    def __init__(self, listers: Mapping[str, Lister], *, resource: Any = None) -> None:
        super().__init__(
            MergedIndexer({ns: lister.indexer for ns, lister in listers.items()}), resource=resource
        )
        self._listers = dict(listers)

    @property
    def namespaces(self) -> tuple[str, ...]:
        return tuple(self._listers)

    def _lister_of(self, namespace: str) -> Lister:
        lister = self._listers.get(namespace)
        if lister is None:
            raise ValueError(
                f"namespace {namespace!r} is not cached by this informer (it caches {', '.join(sorted(self._listers))})"
            )
        return lister

    def namespace(self, namespace: str) -> NamespaceLister:
        self._lister_of(namespace)
        return super().namespace(namespace)

    def get(self, name: str, *, namespace: str | None = None) -> dict[str, Any] | None:
        if namespace:
            return self._lister_of(namespace).get(name, namespace=namespace)
        return super().get(name, namespace=namespace)  # raises: a namespace is needed

    def list(
        self, *, namespace: str | None = None, selector: Any = None
    ) -> builtins.list[dict[str, Any]]:
        if namespace:
            return self._lister_of(namespace).list(namespace=namespace, selector=selector)
        out: builtins.list[dict[str, Any]] = []
        for lister in self._listers.values():
            out.extend(lister.list(selector=selector))
        return out

    def __repr__(self) -> str:
        return f"<MultiNamespaceLister namespaces={sorted(self._listers)}>"


class MultiRegistration:
    """One handler's registrations on every namespace's informer, handled as one."""

    def __init__(self, registrations: Iterable[Any]) -> None:
        self._registrations = tuple(registrations)

    @property
    def registrations(self) -> tuple[Any, ...]:
        return self._registrations

    def has_synced(self) -> bool:
        return all(r.has_synced() for r in self._registrations)

    def backlog(self) -> int:
        return sum(r.backlog() for r in self._registrations)

    def is_removed(self) -> bool:
        return all(r.is_removed() for r in self._registrations)

    def remove(self, timeout: float = 5.0) -> bool:
        deadline = time.monotonic() + timeout
        ok = True
        for registration in self._registrations:
            ok = registration.remove(max(0.0, deadline - time.monotonic())) and ok
        return ok

    def __repr__(self) -> str:
        return f"<MultiRegistration of {len(self._registrations)} informers synced={self.has_synced()}>"


class MultiNamespaceInformer:
    """One informer per namespace, shown as one (module docstring).

    :param informers: ``{namespace: informer}``, at least two; the informers
        must not have started.
    :param name: the name reports use (``v1/secrets@{a,b}``).
    :param resource: the resource they cache (for the lister's scope checks).
    """

    def __init__(self, informers: Mapping[str, Any], *, name: str, resource: Any = None) -> None:
        if len(informers) < 2:
            raise ValueError("a MultiNamespaceInformer needs at least two namespaces")
        self._informers = dict(informers)
        self._name = name
        self._lister = MultiNamespaceLister(
            {ns: i.lister for ns, i in self._informers.items()}, resource=resource
        )

    # -- what a controller, a manager and reports read ------------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def namespaces(self) -> tuple[str, ...]:
        return tuple(self._informers)

    @property
    def informers(self) -> dict[str, Any]:
        """``{namespace: informer}`` (a copy)."""
        return dict(self._informers)

    @property
    def lister(self) -> MultiNamespaceLister:
        return self._lister

    @property
    def indexer(self) -> MergedIndexer:
        """The merged read side of the caches (read-only: ``list``, ``get_by_key``, ``by_index``)."""
        return self._lister.indexer

    def registrations(self) -> list[Any]:
        out: list[Any] = []
        for informer in self._informers.values():
            out.extend(informer.registrations())
        return out

    # -- configuration ----------------------------------------------------------------------
    def add_event_handler(
        self, handler: Any, *, resync_period: float | None = None
    ) -> MultiRegistration:
        """Register ``handler`` on every namespace's informer; one registration for all."""
        kwargs = {} if resync_period is None else {"resync_period": resync_period}
        return MultiRegistration(
            i.add_event_handler(handler, **kwargs) for i in self._informers.values()
        )

    def remove_event_handler(self, registration: MultiRegistration, timeout: float = 5.0) -> bool:
        if not isinstance(registration, MultiRegistration):
            raise ValueError(f"{registration!r} was not returned by {self._name!r}")
        return registration.remove(timeout)

    def add_indexers(self, indexers: Mapping[str, Callable[[Any], list]]) -> None:
        for informer in self._informers.values():
            informer.add_indexers(indexers)

    # -- state --------------------------------------------------------------------------------
    def has_synced(self) -> bool:
        return all(i.has_synced() for i in self._informers.values())

    def wait_for_cache_sync(self, timeout: float | None = None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        for informer in self._informers.values():
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not informer.wait_for_cache_sync(remaining):
                return False
        return True

    def is_running(self) -> bool:
        return all(i.is_running() for i in self._informers.values())

    def healthy(self) -> bool:
        return not self.health_problem()

    def _first(self, problem: Callable[[Any], str]) -> str:
        for namespace, informer in self._informers.items():
            found = problem(informer)
            if found:
                return f"namespace {namespace}: {found}"
        return ""

    def health_problem(self) -> str:
        return self._first(lambda i: i.health_problem())

    def sync_problem(self) -> str:
        return self._first(lambda i: i.sync_problem())

    def object_errors(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for informer in self._informers.values():
            for stage, count in informer.object_errors().items():
                total[stage] = total.get(stage, 0) + count
        return total

    def memory_estimate(self, max_age: float = ESTIMATE_MAX_AGE) -> CacheMemory:
        """The sum of the namespaces' estimates (see :meth:`SharedIndexInformer.memory_estimate`)."""
        return summed(i.memory_estimate(max_age) for i in self._informers.values())

    def last_sync_resource_version(self) -> str:
        """Each namespace's list has its own resourceVersion: ``ns=rv`` pairs, for logs only."""
        return ",".join(
            f"{ns}={i.last_sync_resource_version()}" for ns, i in self._informers.items()
        )

    # -- running --------------------------------------------------------------------------------
    def start(self) -> None:
        for informer in self._informers.values():
            informer.start()

    def stop(self, timeout: float = 5.0) -> bool:
        deadline = time.monotonic() + timeout
        for informer in self._informers.values():
            informer.stop(timeout=0)
        ok = True
        for informer in self._informers.values():
            ok = informer.stop(timeout=max(0.0, deadline - time.monotonic())) and ok
        return ok

    def __repr__(self) -> str:
        return (
            f"<MultiNamespaceInformer {self._name!r} namespaces={sorted(self._informers)} "
            f"synced={self.has_synced()} objects={len(self.indexer)}>"
        )
