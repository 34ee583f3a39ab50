"""The API semantics of the in-process server: what each verb does to the store.

:class:`RestApi` implements create (with ``generateName``), get, list (with
selectors, ``limit``/``continue`` paging at a fixed resourceVersion,
``resourceVersion``/``resourceVersionMatch``), update (optimistic concurrency
on ``metadata.resourceVersion``), patch, the ``/status`` subresource, delete
(finalizers, ``deletionTimestamp``, propagation policies, preconditions),
deletecollection, and the starting point of watches. It validates input and
raises :class:`~pyinformers.testing.apiserver._status.StatusError` with the status code
and reason a real API server uses. It knows nothing of HTTP.

Its verbs live beside it, one concern each, as the classes :class:`RestApi`
is made of: :mod:`._rest_core` (the shared ground: versions, admission,
checks, the end of a deletion), :mod:`._rest_reads` (get, list, watch
start), :mod:`._rest_create`, :mod:`._rest_update` (update, patch, apply),
:mod:`._rest_subresources` (scale, token), :mod:`._rest_delete` and
:mod:`._rest_internal` (the server's own writes). Its helpers too:
:mod:`._options` (query parameters, continue tokens), :mod:`._validation`
(request bodies and metadata), :mod:`._defaults` (what create fills in),
:mod:`._objects` (constants and pure helpers over stored objects).

Rules it keeps (from the Kubernetes API conventions):

* the server owns ``uid``, ``creationTimestamp``, ``resourceVersion``,
  ``generation`` and ``deletionTimestamp``; only kinds with a spec carry a
  ``generation`` (1 on create, +1 when anything outside ``metadata`` -- and
  outside ``status`` for resources with a status subresource -- changes, for
  Deployments annotations too, and when the object is marked for deletion);
* for resources with a status subresource, writes to the main resource keep
  the stored ``.status`` and writes to ``/status`` change only ``.status``;
* an update that changes nothing writes nothing (no new resourceVersion);
* an object with finalizers is only marked for deletion (the DELETE answers
  200 with it); it goes away when an update removes its last finalizer (that
  update is answered with the final state at the previous resourceVersion,
  and watchers see only DELETED);
* custom resources are checked against their CRD's schema and pruned
  (:mod:`._crd`), built-in kinds get their defaults (:mod:`._defaults`);
* namespaced writes need an existing, non-terminating namespace.

Thread-safety: every read-modify-write holds the store lock, so concurrent
requests serialise per write and conflicts are detected exactly.
"""

from __future__ import annotations

from pyinformers.testing.apiserver._objects import (
    FOREGROUND_FINALIZER,
    NAMESPACE_FINALIZER,
    ORPHAN_FINALIZER,
)
from pyinformers.testing.apiserver._rest_delete import DeleteVerbs
from pyinformers.testing.apiserver._rest_internal import InternalWrites
from pyinformers.testing.apiserver._rest_reads import ReadVerbs
from pyinformers.testing.apiserver._rest_subresources import SubresourceVerbs

__all__ = ["RestApi", "FOREGROUND_FINALIZER", "NAMESPACE_FINALIZER", "ORPHAN_FINALIZER"]


class RestApi(ReadVerbs, InternalWrites, SubresourceVerbs, DeleteVerbs):
    """Verbs over the store (see the module docstring). Thread-safe."""

    def __repr__(self) -> str:
        return f"<RestApi {self.store!r}>"
