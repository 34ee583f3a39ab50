"""SharedInformerFactory: one shared informer per (resource, namespace), started and stopped together.

Controllers ask the factory for the informer of a resource instead of
building their own, so two controllers watching Pods share one watch, one
cache and one set of threads. Every informer the factory makes gets the
factory's defaults: resync period, namespace, label and field selectors,
transform (``drop_managed_fields`` unless told otherwise) and the built-in
indexes (by namespace and by controller owner UID).

The factory also records what its users need from the API server
(:meth:`SharedInformerFactory.permissions`): ``get``/``list``/``watch`` on
every resource it made an informer for, and the verbs each writer declared
in :meth:`SharedInformerFactory.client`. ``python -m pyinformers rbac`` turns
that record into RBAC (:mod:`pyinformers.rbac`).

Thread-safety: every method may be called from any thread.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, overload

from pyinformers._exports import renamed_method
from pyinformers.api._client import ResourceClient, selector_query
from pyinformers.api._config import build_api_client
from pyinformers.api._fields import check_selectable
from pyinformers.api._listwatch import ListWatch
from pyinformers.api._metadata import PartialObjectMetadata
from pyinformers.api._permissions import READ_VERBS, DeclaredClient, Permissions
from pyinformers.api._resource import ObjectT, Resource
from pyinformers.api._selectors import as_field_selector, as_label_selector
from pyinformers.cache._informer import SharedIndexInformer
from pyinformers.cache._lister import Lister
from pyinformers.cache._multi import MultiNamespaceInformer
from pyinformers.cache._sharded import ShardedInformer, shard_selector
from pyinformers.cache._store import default_indexers
from pyinformers.cache._transforms import chain, drop_managed_fields, share_metadata_strings
from pyinformers.cache.reflector._options import ReflectorOptions
from pyinformers.clock import Clock

__all__ = ["Selection", "SharedInformerFactory"]

_DEFAULT: Any = object()  # "use the factory's default"

log = logging.getLogger(__name__)

#: Built-in resources whose whole-cluster cache is the classic way to run out of memory.
_HEAVY = {("", "secrets"): "Secret", ("", "configmaps"): "ConfigMap"}


@dataclass(frozen=True)
class Selection:
    """What one informer of a factory caches: which namespaces, which labels and fields, whole objects or metadata.

    ``namespaces`` is None for every namespace (and for cluster-scoped
    resources), else a sorted tuple of at least one namespace. Selectors are
    the query strings the server is sent (None: no selector).
    """

    namespaces: tuple[str, ...] | None = None
    label_selector: str | None = None
    field_selector: str | None = None
    metadata_only: bool = False

    @property
    def namespace(self) -> str | None:
        """The one namespace, or None (every namespace, or several)."""
        return (
            self.namespaces[0]
            if self.namespaces is not None and len(self.namespaces) == 1
            else None
        )


def _check_selector(value: Any, argument: str, parse: Callable[[Any], Any]) -> None:
    """Raise ValueError (TypeError for a value of the wrong type) unless ``value`` parses."""
    try:
        parse(value)
    except ValueError as error:
        raise ValueError(f"{argument} {value!r} is malformed: {error}") from None


class SharedInformerFactory:
    """Shared informers for many resources, from one API client.

    :param api_client: an official ``kubernetes.client.ApiClient``; or give
        ``kubeconfig`` (a path); with neither, the in-cluster configuration or
        ``~/.kube/config`` is used (:func:`~pyinformers.api._config.build_api_client`;
        raises :class:`~pyinformers.api._config.ConfigurationError` naming the file).
    :param resync_period: default resync period of every informer (seconds; 0: none).
    :param namespace: watch only this namespace (``None``: all) by default; per-call
        ``informer(..., namespace=... or namespaces=[...])`` overrides it. Ignored for
        cluster-scoped resources.
    :param label_selector: restrict every informer to objects with these labels
        by default (checked here: a malformed selector raises ValueError at once);
        ``informer(..., label_selector=...)`` overrides it.
    :param field_selector: restrict every informer by fields (``metadata.name=x``;
        checked here too) by default; ``informer(..., field_selector=...)`` overrides it.
    :param transform: applied to every object before caching; the default
        drops ``metadata.managedFields``; ``None`` keeps objects as sent.
    :param reflector_options: a :class:`~pyinformers.cache.ReflectorOptions` for every
        Reflector (a mapping of the same names is converted; mistakes raise here).
    :param metrics_registry: prometheus-client registry (default global; ``False``: none).
    """

    def __init__(
        self,
        api_client: Any = None,
        *,
        kubeconfig: str | os.PathLike | None = None,
        resync_period: float = 0,
        namespace: str | None = None,
        label_selector: Any = None,
        field_selector: Any = None,
        transform: Callable[[Any], Any] | None = drop_managed_fields,
        clock: Clock | None = None,
        reflector_options: ReflectorOptions | Mapping[str, Any] | None = None,
        metrics_registry: Any = None,
    ) -> None:
        if api_client is not None and kubeconfig is not None:
            raise ValueError("give either api_client or kubeconfig, not both")
        if resync_period < 0:
            raise ValueError(f"resync_period must be >= 0, got {resync_period!r}")
        if transform is not None and not callable(transform):
            raise TypeError(f"transform must be callable or None, got {transform!r}")
        # A malformed selector is a mistake no retry fixes (the server answers 400 forever):
        # refuse it now, naming the argument and the position.
        _check_selector(label_selector, "label_selector", as_label_selector)
        _check_selector(field_selector, "field_selector", as_field_selector)
        self._api_client = api_client if api_client is not None else build_api_client(kubeconfig)
        self._resync_period = float(resync_period)
        self._namespace = namespace
        self._label_selector = label_selector
        self._field_selector = field_selector
        self._transform = transform
        self._clock = clock
        self._reflector_options = ReflectorOptions.of(reflector_options)
        self._metrics_registry = metrics_registry
        self._lock = threading.Lock()
        # (resource, selection) -> informer; insertion order = creation order
        self._informers: dict[tuple[Resource[Any], Selection], Any] = {}
        self._clients: dict[Resource[Any], ResourceClient[Any]] = {}
        self._permissions = Permissions()
        self._shut_down = False
        # Informers made from now on with the factory's label selector may cache only some shards
        # (ShardedInformer); set by a sharded Manager with shard caches, which decides at start.
        self._shardable = False

    @property
    def api_client(self) -> Any:
        return self._api_client

    def _client(self, resource: Resource[ObjectT]) -> ResourceClient[ObjectT]:
        if not isinstance(resource, Resource):
            raise TypeError(f"resource must be a Resource, got {type(resource).__name__}")
        with self._lock:
            client: ResourceClient[ObjectT] | None = self._clients.get(resource)
            if client is None:
                client = self._clients[resource] = ResourceClient(self._api_client, resource)
            return client

    def client(
        self,
        resource: Resource[ObjectT],
        *,
        verbs: Sequence[str] | None = None,
        status_verbs: Sequence[str] = (),
        field_manager: str | None = None,
    ) -> ResourceClient[ObjectT]:
        """A client for ``resource``; declare what it does with ``verbs`` (and ``status_verbs``).

        With ``verbs`` (RBAC verbs such as ``("create", "update")``; ``()``
        for a status-only writer) the factory records them in
        :meth:`permissions` and returns a
        :class:`~pyinformers.api._permissions.DeclaredClient` that refuses any
        other verb before sending a request. ``status_verbs`` are the verbs on
        the ``status`` subresource (``("update",)`` for ``replace_status``).
        Without ``verbs``: the plain, shared :class:`ResourceClient`, and the
        RBAC generator reports the resource as undeclared. ``"apply"`` declares
        server-side apply (``patch``, and ``create`` on the object itself);
        ``field_manager`` is the manager ``apply`` writes as by default
        (:meth:`Controller.client <pyinformers.controller.Controller.client>` passes
        the controller's name).
        """
        if verbs is None:
            if status_verbs:
                raise ValueError(
                    "status_verbs needs verbs too (pass verbs=() for a status-only writer)"
                )
            self._permissions.note_undeclared(resource)
            if field_manager:
                return ResourceClient(self._api_client, resource, field_manager=field_manager)
            return self._client(resource)
        verbs = (
            verbs if isinstance(verbs, str) else tuple(verbs)
        )  # a str is refused by grant(), with a hint
        namespace = self._namespace
        self._permissions.grant(resource, verbs, namespace=namespace)
        if status_verbs:
            self._permissions.grant(
                resource, status_verbs, namespace=namespace, subresource="status"
            )
        return DeclaredClient(
            self._api_client,
            resource,
            verbs,
            {"status": status_verbs} if status_verbs else None,
            field_manager=field_manager,
        )

    def permissions(self) -> Permissions:
        """What this factory's informers and declared clients need (a live record)."""
        return self._permissions

    @overload
    def informer(
        self,
        resource: Resource[ObjectT],
        *,
        namespace: Any = ...,
        namespaces: None = None,
        label_selector: Any = ...,
        field_selector: Any = ...,
        metadata_only: Literal[False] = False,
        mutation_detector: bool | None = None,
    ) -> SharedIndexInformer[ObjectT]: ...

    @overload
    def informer(
        self,
        resource: Resource[Any],
        *,
        namespace: Any = ...,
        namespaces: Sequence[str],
        label_selector: Any = ...,
        field_selector: Any = ...,
        metadata_only: bool = False,
        mutation_detector: bool | None = None,
    ) -> Any: ...

    @overload
    def informer(
        self,
        resource: Resource[Any],
        *,
        namespace: Any = ...,
        namespaces: Sequence[str] | None = None,
        label_selector: Any = ...,
        field_selector: Any = ...,
        metadata_only: bool,
        mutation_detector: bool | None = None,
    ) -> Any: ...

    def informer(
        self,
        resource: Resource[Any],
        *,
        namespace: Any = _DEFAULT,
        namespaces: Sequence[str] | None = None,
        label_selector: Any = _DEFAULT,
        field_selector: Any = _DEFAULT,
        metadata_only: bool = False,
        mutation_detector: bool | None = None,
    ) -> Any:
        """The one informer for ``resource`` with this selection, created on first use.

        The selection: ``namespace`` (one, or None for all) or ``namespaces``
        (several, merged into one :class:`~pyinformers.cache.MultiNamespaceInformer`
        that caches nothing of the others); ``label_selector`` and
        ``field_selector`` (left out: the factory's; None: none);
        ``metadata_only`` (cache ``PartialObjectMetadata``: see docs/informers.rst).
        Each distinct selection is its own informer, so the same resource can
        be cached twice, differently, when asked. ``mutation_detector`` applies
        to an informer created by this call (None: the process default).

        A selection the server could never serve raises ValueError here: a
        malformed selector, a field selector on a field the resource does not
        offer, namespaces for a cluster-scoped resource. An informer created
        after :meth:`start` is not running until :meth:`start` is called again.
        """
        client = self._client(resource)
        selection = self._selection(
            resource, namespace, namespaces, label_selector, field_selector, metadata_only
        )
        key = (resource, selection)
        with self._lock:
            if self._shut_down:
                raise RuntimeError("the informer factory was shut down")
            informer = self._informers.get(key)
            if informer is None:
                informer = self._new_informer(client, resource, selection, mutation_detector)
                self._informers[key] = informer
                for ns in selection.namespaces or (None,):
                    self._permissions.grant(resource, READ_VERBS, namespace=ns)
                self._warn_if_heavy(resource, selection, informer.name)
            return informer

    def _selection(
        self,
        resource: Resource[Any],
        namespace: Any,
        namespaces: Sequence[str] | None,
        label_selector: Any,
        field_selector: Any,
        metadata_only: bool,
    ) -> Selection:
        """The :class:`Selection` these arguments ask for, or ValueError for one the server cannot serve."""
        if namespaces is not None:
            if namespace is not _DEFAULT:
                raise ValueError("give namespace (one) or namespaces (several), not both")
            if isinstance(namespaces, str):
                raise ValueError(
                    f"namespaces must be a list of namespace names, got the string {namespaces!r}"
                )
            if not resource.namespaced:
                raise ValueError(
                    f"{resource} is cluster-scoped: it has no namespaces to select (got {list(namespaces)!r})"
                )
            chosen = tuple(sorted(set(namespaces)))
            if not chosen:
                raise ValueError("namespaces must name at least one namespace")
            for ns in chosen:
                if not isinstance(ns, str) or not ns:
                    raise ValueError(f"namespaces must be non-empty strings, got {ns!r}")
            selected: tuple[str, ...] | None = chosen
        else:
            one = self._namespace if namespace is _DEFAULT else namespace
            selected = (one,) if one and resource.namespaced else None
        label = self._label_selector if label_selector is _DEFAULT else label_selector
        field = self._field_selector if field_selector is _DEFAULT else field_selector
        if label_selector is not _DEFAULT:
            _check_selector(label, "label_selector", as_label_selector)
        if field_selector is not _DEFAULT:
            _check_selector(field, "field_selector", as_field_selector)
        field_text = selector_query(field, "field")
        if field_text:
            check_selectable(resource, as_field_selector(field_text))
        return Selection(selected, selector_query(label, "label"), field_text, bool(metadata_only))

    def _name(
        self, resource: Resource[Any], selection: Selection, namespace: str | None = None
    ) -> str:
        """``v1/pods``, ``v1/pods@ns``, ``v1/pods@{a,b}``, then ``[labels=...]`` / ``[fields=...]`` where the
        selection differs from the factory's defaults, and ``#metadata`` for a metadata-only informer."""
        name = str(resource)
        if namespace is not None:
            name += f"@{namespace}"
        elif selection.namespaces is not None:
            spaces = selection.namespaces
            name += f"@{spaces[0]}" if len(spaces) == 1 else "@{" + ",".join(spaces) + "}"
        if selection.label_selector != selector_query(self._label_selector, "label"):
            name += f"[labels={selection.label_selector or '<none>'}]"
        if selection.field_selector != selector_query(self._field_selector, "field"):
            name += f"[fields={selection.field_selector or '<none>'}]"
        if selection.metadata_only:
            name += "#metadata"
        return name

    def _new_informer(
        self,
        client: ResourceClient[Any],
        resource: Resource[Any],
        selection: Selection,
        mutation_detector: bool | None,
    ) -> Any:
        def one(ns: str | None, shard: int | None = None) -> SharedIndexInformer[Any]:
            labels, name = selection.label_selector, self._name(resource, selection, ns)
            if shard is not None:
                labels = ",".join(filter(None, (labels, shard_selector(shard))))
                name += f"#shard-{shard}"
            lister_watcher = ListWatch(
                client,
                namespace=ns,
                label_selector=labels,
                field_selector=selection.field_selector,
                metadata_only=selection.metadata_only,
            )
            return SharedIndexInformer(
                lister_watcher,
                name=name,
                resync_period=self._resync_period,
                indexers=default_indexers(),
                transform=chain(self._transform, share_metadata_strings)
                if selection.metadata_only
                else self._transform,
                clock=self._clock,
                reflector_options=self._reflector_options,
                metrics_registry=self._metrics_registry,
                mutation_detector=mutation_detector,
            )

        spaces = selection.namespaces
        namespace = spaces[0] if spaces else None
        if self._shardable and (spaces is None or len(spaces) == 1):
            if selection.label_selector == selector_query(self._label_selector, "label"):
                return ShardedInformer(
                    lambda shard: one(namespace, shard),
                    name=self._name(resource, selection),
                    resource=resource,
                )
        if spaces is None or len(spaces) == 1:
            return one(namespace)
        return MultiNamespaceInformer(
            {ns: one(ns) for ns in spaces}, name=self._name(resource, selection), resource=resource
        )

    @staticmethod
    def _warn_if_heavy(resource: Resource[Any], selection: Selection, name: str) -> None:
        kind = _HEAVY.get((resource.group, resource.plural))
        if kind is None or selection.namespaces is not None or selection.metadata_only:
            return
        if selection.label_selector or selection.field_selector:
            return
        log.warning(
            "informer %s caches every %s of the cluster, whole: each replica holds all of them in memory "
            "(often the largest cache an operator has); if the controller reads only some of them, or only "
            "their metadata, give namespace=/namespaces=, a label_selector=/field_selector=, or metadata_only=True",
            name,
            kind,
        )

    @overload
    def lister(
        self,
        resource: Resource[ObjectT],
        *,
        namespace: Any = ...,
        namespaces: Sequence[str] | None = None,
        label_selector: Any = ...,
        field_selector: Any = ...,
        metadata_only: Literal[False] = False,
    ) -> Lister[ObjectT]: ...

    @overload
    def lister(
        self,
        resource: Resource[Any],
        *,
        namespace: Any = ...,
        namespaces: Sequence[str] | None = None,
        label_selector: Any = ...,
        field_selector: Any = ...,
        metadata_only: Literal[True],
    ) -> Lister[PartialObjectMetadata]: ...

    @overload
    def lister(
        self,
        resource: Resource[Any],
        *,
        namespace: Any = ...,
        namespaces: Sequence[str] | None = None,
        label_selector: Any = ...,
        field_selector: Any = ...,
        metadata_only: bool,
    ) -> Lister[Any]: ...

    def lister(
        self,
        resource: Resource[Any],
        *,
        namespace: Any = _DEFAULT,
        namespaces: Sequence[str] | None = None,
        label_selector: Any = _DEFAULT,
        field_selector: Any = _DEFAULT,
        metadata_only: bool = False,
    ) -> Lister[Any]:
        """The lister over :meth:`informer`'s cache (the same selection arguments).

        Typed by its resource (``factory.lister(PODS)`` is a ``Lister[Pod]``);
        with ``metadata_only=True``, a ``Lister[PartialObjectMetadata]``."""
        informer = self.informer(
            resource,
            namespace=namespace,
            namespaces=namespaces,
            label_selector=label_selector,
            field_selector=field_selector,
            metadata_only=metadata_only,
        )
        lister: Lister[Any] = informer.lister
        return lister

    def informers(self) -> dict[tuple[Resource[Any], Selection], Any]:
        """A snapshot of ``{(resource, selection): informer}`` (:class:`Selection`), in creation order."""
        with self._lock:
            return dict(self._informers)

    def start(self) -> None:
        """Start every informer not yet running (call again after adding informers)."""
        with self._lock:
            if self._shut_down:
                raise RuntimeError("the informer factory was shut down")
            informers = list(self._informers.values())
        for informer in informers:
            informer.start()

    def wait_for_cache_sync(self, timeout: float | None = None) -> bool:
        """Wait until every started informer synced; True when all did within ``timeout``.

        ``timeout`` (real seconds) bounds the whole wait. Informers not started
        are left out. :meth:`sync_status` tells which resources are synced.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        synced = True
        for informer in self.informers().values():
            if not informer.is_running() and not informer.has_synced():
                continue
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            synced = informer.wait_for_cache_sync(remaining) and synced
        return synced

    def sync_status(self) -> dict[Resource[Any], bool]:
        """``{resource: synced}`` of the started informers, now (no waiting).

        A resource watched in several namespaces is synced when all of them are.
        """
        result: dict[Resource[Any], bool] = {}
        for (resource, _ns), informer in self.informers().items():
            if not informer.is_running() and not informer.has_synced():
                continue
            result[resource] = result.get(resource, True) and informer.has_synced()
        return result

    def stop(self, timeout: float = 5.0) -> bool:
        """Stop every informer and join their threads within ``timeout`` seconds in all.

        True when every thread ended. The factory cannot be used afterwards.
        """
        with self._lock:
            self._shut_down = True
            informers = list(self._informers.values())
        deadline = time.monotonic() + timeout
        for informer in informers:  # signal all first so they wind down in parallel
            informer.stop(timeout=0)
        ok = True
        for informer in informers:
            ok = informer.stop(timeout=max(0.0, deadline - time.monotonic())) and ok
        return ok

    shutdown = renamed_method(stop, "shutdown")

    def __enter__(self) -> SharedInformerFactory:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __repr__(self) -> str:
        with self._lock:
            informers = list(self._informers.values())
        running = sum(1 for i in informers if i.is_running())
        synced = sum(1 for i in informers if i.has_synced())
        return (
            f"<SharedInformerFactory informers={len(informers)} running={running} synced={synced}"
            f" namespace={self._namespace!r} resync={self._resync_period:g}s>"
        )
