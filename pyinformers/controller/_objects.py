"""What a reconcile does to objects, as controller-runtime's ``controllerutil`` does it, on plain dicts.

* :func:`create_or_update` / :func:`create_or_patch` -- read the object,
  let a ``mutate`` function make it what it should be, and write only what
  changed; they say what happened (:class:`OperationResult`).
* :func:`update_status` / :func:`update_object` -- write and hand the stored
  object back *in place* (Go's ``Status().Update(ctx, &obj)``), so the next
  write of the same reconcile carries the new resourceVersion instead of
  failing with a 409.
* :func:`finalize` -- kube-rs's ``finalizer()``: a reconcile split into
  ``apply`` and ``cleanup``, with the finalizer added before anything is
  done and removed only once ``cleanup`` succeeded.

Every write goes through the client given (a
:class:`~pyinformers.api.ResourceClient` or a declared one), so its verbs
are the RBAC the controller declares, and the controller's stale-read guard
sees it. Concurrency: writes that depend on what was read carry its
``resourceVersion`` (a finalizer change is a merge patch with it), so a
concurrent change makes them fail with ``Conflict``, which the controller
retries; nothing is ever written from a stale read.

Thread-safe as far as their arguments are: they deep-copy cached objects
before changing them, and mutate only the object the caller passed to be
filled in.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any, TypeVar

from pyinformers.api import NotFound
from pyinformers.api.meta import contains_finalizer, deep_copy, validate_finalizer_name

__all__ = [
    "ObjectBeingDeleted",
    "OperationResult",
    "create_or_patch",
    "create_or_update",
    "finalize",
    "merge_patch",
    "update_object",
    "update_status",
]

R = TypeVar("R")


class OperationResult(str, enum.Enum):
    """What :func:`create_or_update` / :func:`create_or_patch` did (controller-runtime's values)."""

    UNCHANGED = "unchanged"
    CREATED = "created"
    UPDATED = "updated"
    UPDATED_STATUS = "updatedStatus"
    UPDATED_STATUS_ONLY = "updatedStatusOnly"

    def __str__(self) -> str:
        return self.value


class ObjectBeingDeleted(RuntimeError):
    """The object to create or change is being deleted (it has a ``deletionTimestamp``); nothing was written.

    Writing it would fight the deletion (the server refuses new finalizers,
    and a create must wait until the old object is gone). The controller logs
    it as an expected condition, in one line, and retries with backoff: once
    the object is gone, the next reconcile creates it anew.
    """

    def __init__(self, what: str, since: str) -> None:
        self.what = what
        self.since = since
        super().__init__(f"{what} is being deleted (deletionTimestamp {since}); not writing it")


def _md(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    md = obj.get("metadata")
    return md if isinstance(md, Mapping) else {}


def _identity(obj: Mapping[str, Any], what: str) -> tuple[str | None, str]:
    md = _md(obj)
    name = md.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(
            f"{what}: obj needs metadata.name (generateName cannot be looked up first)"
        )
    ns = md.get("namespace") or None
    return ns, name


def _check_identity(before: tuple[str | None, str], obj: Mapping[str, Any], what: str) -> None:
    md = _md(obj)
    after = (md.get("namespace") or None, md.get("name"))
    if after[1] != before[1]:
        raise ValueError(
            f"{what}: the mutate function changed metadata.name from {before[1]!r} to {after[1]!r}"
        )
    if after[0] != before[0]:
        raise ValueError(
            f"{what}: the mutate function changed metadata.namespace from {before[0]!r} to {after[0]!r}"
        )


def _label(ns: str | None, name: str, client: Any) -> str:
    kind = getattr(getattr(client, "resource", None), "kind", "object")
    return f"{kind} {ns}/{name}" if ns else f"{kind} {name}"


def _read(client: Any, lister: Any, ns: str | None, name: str) -> dict | None:
    """The current object (a private copy), from ``lister`` if given (the cache), else the server."""
    if lister is not None:
        cached = lister.get(name, namespace=ns) if ns else lister.get(name)
        return None if cached is None else deep_copy(cached)
    try:
        return client.get(name, ns) if ns else client.get(name)
    except NotFound:
        return None


def _refuse_deleting(current: Mapping[str, Any], label: str) -> None:
    since = _md(current).get("deletionTimestamp")
    if since:
        raise ObjectBeingDeleted(label, str(since))


def _replace_in_place(target: MutableMapping[str, Any], stored: Mapping[str, Any]) -> None:
    target.clear()
    target.update(stored)


def _read_and_mutate(
    client: Any,
    obj: MutableMapping[str, Any],
    mutate: Callable[[MutableMapping[str, Any]], Any],
    lister: Any,
    what: str,
) -> tuple[tuple[str | None, str], dict | None]:
    """Fill ``obj`` with the current object (if any), apply ``mutate``, check the name and namespace.

    Returns the identity and a copy of the object as it was (None: it does not exist yet).
    """
    ident = _identity(obj, what)
    current = _read(client, lister, *ident)
    before = None
    if current is not None:
        _refuse_deleting(current, _label(*ident, client))
        before = deep_copy(current)
        _replace_in_place(obj, current)
    mutate(obj)
    _check_identity(ident, obj, what)
    return ident, before


def create_or_update(
    client: Any,
    obj: MutableMapping[str, Any],
    mutate: Callable[[MutableMapping[str, Any]], Any],
    *,
    lister: Any = None,
) -> OperationResult:
    """Make ``obj`` exist as ``mutate`` wants it, with one create, one update, or no write at all.

    ``obj`` names the object (``metadata.name``, and ``namespace`` for a
    namespaced resource); it is read (from ``lister`` when given, else from
    the server), ``mutate(obj)`` changes the current state in place, and the
    result is created (when absent) or replaced (when ``mutate`` changed
    anything). On return ``obj`` holds the stored object (or the current one
    when unchanged). Raises ValueError when ``mutate`` changes the name or
    namespace, :class:`ObjectBeingDeleted` for an object with a
    deletionTimestamp, and the server's errors (``Conflict`` when the read
    was stale: retry).
    """
    ident, before = _read_and_mutate(client, obj, mutate, lister, "create_or_update")
    if before is None:
        _replace_in_place(obj, client.create(obj))
        return OperationResult.CREATED
    if obj == before:
        return OperationResult.UNCHANGED
    _replace_in_place(obj, client.replace(obj))
    return OperationResult.UPDATED


def merge_patch(old: Any, new: Any) -> Any:
    """The RFC 7386 merge patch that turns ``old`` into ``new`` (``{}`` when equal).

    Objects are diffed key by key (a removed key becomes ``None``); any
    other value, lists included, is replaced whole, as a merge patch does.
    """
    if not isinstance(old, Mapping) or not isinstance(new, Mapping):
        return deep_copy(new)
    patch: dict[str, Any] = {}
    for key in old:
        if key not in new:
            patch[key] = None
    for key, value in new.items():
        if key not in old:
            patch[key] = deep_copy(value)
        elif old[key] != value:
            if isinstance(old[key], Mapping) and isinstance(value, Mapping):
                patch[key] = merge_patch(old[key], value)
            else:
                patch[key] = deep_copy(value)
    return patch


def create_or_patch(
    client: Any,
    obj: MutableMapping[str, Any],
    mutate: Callable[[MutableMapping[str, Any]], Any],
    *,
    lister: Any = None,
    status_subresource: bool = True,
) -> OperationResult:
    """:func:`create_or_update`, writing only what ``mutate`` changed, as merge patches.

    A change outside ``status`` is one merge patch of the object; a change to
    ``status`` one merge patch of the ``status`` subresource (when
    ``status_subresource``, the default; else it goes with the object). The
    result says which: ``updated``, ``updatedStatus`` (both) or
    ``updatedStatusOnly``. On create, ``status`` set by ``mutate`` is
    written by a status patch after the create, as controller-runtime does.
    Errors as :func:`create_or_update`.
    """
    (ns, name), before = _read_and_mutate(client, obj, mutate, lister, "create_or_patch")
    if before is None:
        status = obj.get("status")
        created = client.create(obj)
        if status_subresource and status and created.get("status") != status:
            created = client.patch(name, {"status": deep_copy(status)}, ns, subresource="status")
        _replace_in_place(obj, created)
        return OperationResult.CREATED
    patch = merge_patch(before, obj)
    if not patch:
        return OperationResult.UNCHANGED
    status_patch = patch.pop("status", None) if status_subresource else None
    stored: dict | None = None
    if patch:
        stored = client.patch(name, patch, ns)
    if status_patch is not None:
        stored = client.patch(name, {"status": status_patch}, ns, subresource="status")
    assert stored is not None
    _replace_in_place(obj, stored)
    if status_patch is None:
        return OperationResult.UPDATED
    return OperationResult.UPDATED_STATUS if patch else OperationResult.UPDATED_STATUS_ONLY


def update_status(client: Any, obj: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """PUT ``obj``'s status (``client.replace_status``) and make ``obj`` the stored object; returns ``obj``.

    Go's ``r.Status().Update(ctx, &obj)``: afterwards ``obj`` carries the new
    resourceVersion, so a second write in the same reconcile does not fail
    with a 409 against its own first one.
    """
    _replace_in_place(obj, client.replace_status(obj))
    return obj


def update_object(client: Any, obj: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """PUT ``obj`` (``client.replace``) and make ``obj`` the stored object; returns ``obj`` (Go's ``r.Update``)."""
    _replace_in_place(obj, client.replace(obj))
    return obj


def _finalizer_patch(obj: Mapping[str, Any], finalizers: list) -> dict:
    # The resourceVersion makes the patch conditional: a concurrent change is a 409, never lost.
    return {
        "metadata": {"finalizers": finalizers, "resourceVersion": _md(obj).get("resourceVersion")}
    }


def finalize(
    client: Any,
    finalizer: str,
    obj: Mapping[str, Any],
    *,
    apply: Callable[[dict], R],
    cleanup: Callable[[dict], R],
) -> R | None:
    """Reconcile ``obj`` as ``apply`` or ``cleanup``, holding ``finalizer`` on it while it lives.

    * alive, without the finalizer: add it (a merge patch conditional on the
      object's resourceVersion), then ``apply`` the stored object;
    * alive, with it: ``apply(copy)``, no write here;
    * being deleted, with it: ``cleanup(copy)``; when it returns without
      raising and without asking to look again (``None`` or a
      :class:`~pyinformers.controller.Result` with no requeue), the finalizer
      is removed (conditional patch again); when it raises, or returns
      ``Result(requeue=True)`` / ``Result(requeue_after=s)`` (not done yet),
      the finalizer stays and nothing is written;
    * being deleted, without it: nothing to do, None.

    Returns what ``apply`` or ``cleanup`` returned. ``obj`` (a cached object)
    is never mutated: the callbacks get a private copy. ``finalizer`` must be
    domain-qualified (``example.com/cleanup``), else ValueError before any
    write. The client needs ``patch`` on the resource.
    """
    validate_finalizer_name(finalizer)
    ns, name = _identity(obj, "finalize")
    current = deep_copy(obj)
    finalizers = list(_md(current).get("finalizers") or [])
    if _md(current).get("deletionTimestamp"):
        if not contains_finalizer(current, finalizer):
            return None
        outcome = cleanup(current)
        if (
            getattr(outcome, "requeue", False)
            or getattr(outcome, "requeue_after", None) is not None
        ):
            return outcome  # cleanup not finished: keep the finalizer
        kept = [f for f in finalizers if f != finalizer]
        client.patch(name, _finalizer_patch(current, kept), ns)
        return outcome
    if not contains_finalizer(current, finalizer):
        current = client.patch(name, _finalizer_patch(current, [*finalizers, finalizer]), ns)
    return apply(current)
