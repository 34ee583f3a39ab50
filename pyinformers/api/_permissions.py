"""What a controller may do to the API server: declared verbs, recorded permissions, RBAC rules.

A controller reads through informers (``get``, ``list``, ``watch`` on each
resource it caches) and writes through :class:`~pyinformers.api._client.ResourceClient`
objects. Writes are declared where the client is made::

    self.deployments_client = factory.client(DEPLOYMENTS, verbs=("create", "update"))
    self.foos_client = factory.client(FOOS, status_verbs=("update",))

The factory records both in a :class:`Permissions` set, from which
``python -m pyinformers rbac`` derives the Role or ClusterRole the controller
needs (:mod:`pyinformers.rbac`). A declared client is a
:class:`DeclaredClient`: it refuses, before any request, a call whose verb was
not declared (:class:`UndeclaredVerb`), so a reconcile that starts writing
something new fails in its unit tests instead of in the cluster with a 403.

Verbs are Kubernetes' RBAC verbs. ``ResourceClient`` methods map to them as
:data:`METHOD_VERBS` says; ``replace_status`` needs ``update`` on the
``status`` subresource (RBAC resource ``foos/status``), and ``patch(...,
subresource="status")`` needs ``patch`` on it.

What the API server actually allows is another matter: a verb missing from
the cluster's RBAC is refused with a 403. Most refusals show at once, but
not a missing ``list`` on a resource an informer syncs with a streaming list
(kube-apiserver authorizes ``watch?sendInitialEvents=true`` as a plain
``watch``): the cache syncs, and the 403 comes with the first fallback to a
list, hours later. :func:`review_access` asks the server in advance (one
SelfSubjectAccessReview, the request behind ``kubectl auth can-i``), and
:class:`MissingPermission` is the error that says what to add to the Role.

Thread-safety: :class:`Permissions` is guarded by a lock; a
:class:`DeclaredClient` is stateless, like the client it extends; the
functions are pure or make one request.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pyinformers.api._client import ListPage, ResourceClient
from pyinformers.api._errors import Forbidden, MethodNotAllowed, NotFound
from pyinformers.api._resource import ObjectT, Resource
from pyinformers.api._watch import WatchStream

__all__ = [
    "DeclaredClient",
    "METHOD_VERBS",
    "MissingPermission",
    "Permissions",
    "READ_VERBS",
    "Grant",
    "SELF_SUBJECT_ACCESS_REVIEWS",
    "UndeclaredVerb",
    "VERBS",
    "permission_advice",
    "review_access",
]

#: Every verb RBAC knows for resources (``deletecollection`` included for completeness).
VERBS = frozenset(
    {"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
)

#: What an informer needs on the resource it caches.
READ_VERBS = ("get", "list", "watch")

#: ``ResourceClient`` method -> RBAC verb (``replace_status`` is ``update`` on ``<resource>/status``).
METHOD_VERBS: Mapping[str, str] = {
    "get": "get",
    "list": "list",
    "list_all": "list",
    "watch": "watch",
    "create": "create",
    "replace": "update",
    "replace_status": "update",
    "patch": "patch",
    "apply": "patch",
    "apply_status": "patch",
    "delete": "delete",
}

#: What the declaration ``"apply"`` stands for: server-side apply is a ``patch`` that
#: creates the object when it is missing (``create``); on a subresource, only ``patch``.
APPLY_VERBS = ("patch", "create")


def expand_verbs(verbs: Iterable[str], *, subresource: str | None = None) -> tuple[str, ...]:
    """``verbs`` with ``"apply"`` replaced by the RBAC verbs it needs (order kept, no repeats)."""
    if isinstance(verbs, str):
        return verbs  # type: ignore[return-value]  # refused with a hint by _check_verbs
    out: list[str] = []
    for verb in verbs:
        out.extend((APPLY_VERBS if not subresource else ("patch",)) if verb == "apply" else (verb,))
    return tuple(dict.fromkeys(out))


#: ``authorization.k8s.io/v1`` SelfSubjectAccessReviews: "may I ...?" for the caller's own credentials.
SELF_SUBJECT_ACCESS_REVIEWS = Resource(
    "authorization.k8s.io",
    "v1",
    "selfsubjectaccessreviews",
    "SelfSubjectAccessReview",
    namespaced=False,
)


class UndeclaredVerb(PermissionError):
    """A declared client was asked for a verb it did not declare (no request was sent).

    The message names the verb, the RBAC resource and the declaration to change.
    """


@dataclass(frozen=True, order=True)
class Grant:
    """One permission: ``verb`` on ``resource`` (``plural`` or ``plural/subresource``) of ``group``.

    ``namespace`` None means cluster-wide (a ClusterRole); a name means a Role
    in that namespace. Cluster-scoped resources are always cluster-wide.
    """

    group: str
    resource: str
    verb: str
    namespace: str | None = None


def _check_verbs(verbs: Iterable[str], what: str) -> tuple[str, ...]:
    if isinstance(verbs, str):
        raise TypeError(
            f"{what} is a sequence of verbs, not one string ({verbs!r}); write ({verbs!r},)"
        )
    out = tuple(dict.fromkeys(verbs))
    unknown = sorted(set(out) - VERBS)
    if unknown:
        raise ValueError(f"{what}: unknown verb(s) {unknown}; RBAC verbs are {sorted(VERBS)}")
    return out


class Permissions:
    """A growing set of :class:`Grant`, plus the clients made without a declaration.

    ``undeclared`` lists resources for which a client was made without
    ``verbs``: the RBAC generator refuses to guess what such a client writes.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._grants: set[Grant] = set()
        self._undeclared: set[Resource[Any]] = set()

    def grant(
        self,
        resource: Resource[Any],
        verbs: Iterable[str],
        *,
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> None:
        """Record ``verbs`` on ``resource`` (or its ``subresource``) in ``namespace`` (None: all).

        ``"apply"`` stands for what server-side apply needs (:data:`APPLY_VERBS`).
        """
        verbs = _check_verbs(expand_verbs(verbs, subresource=subresource), f"verbs for {resource}")
        name = resource.plural if not subresource else f"{resource.plural}/{subresource}"
        ns = namespace if resource.namespaced else None
        with self._lock:
            self._grants.update(Grant(resource.group, name, verb, ns) for verb in verbs)

    def grant_all(self, grants: Iterable[Grant]) -> None:
        with self._lock:
            self._grants.update(grants)

    def note_undeclared(self, resource: Resource[Any]) -> None:
        with self._lock:
            self._undeclared.add(resource)

    def grants(self) -> list[Grant]:
        """Every grant, sorted."""
        with self._lock:
            return sorted(self._grants)

    def undeclared(self) -> list[Resource[Any]]:
        with self._lock:
            return sorted(self._undeclared, key=str)

    def __repr__(self) -> str:
        return f"<Permissions grants={len(self.grants())} undeclared={len(self.undeclared())}>"


class DeclaredClient(ResourceClient[ObjectT]):
    """A :class:`~pyinformers.api._client.ResourceClient` limited to the verbs it declared.

    Every method whose verb (see :data:`METHOD_VERBS`) is not in ``verbs``
    (for the object) or ``subresource_verbs[sub]`` (for a subresource) raises
    :class:`UndeclaredVerb` before sending anything; declared ones behave
    exactly as the plain client's. Stateless and thread-safe, like its base.
    """

    def __init__(
        self,
        api_client: Any,
        resource: Resource[ObjectT],
        verbs: Iterable[str],
        subresource_verbs: Mapping[str, Iterable[str]] | None = None,
        *,
        request_timeout: float | None = 60.0,
        field_manager: str | None = None,
    ) -> None:
        super().__init__(
            api_client, resource, request_timeout=request_timeout, field_manager=field_manager
        )
        self._verbs = frozenset(expand_verbs(verbs))
        self._subresource_verbs = {
            sub: frozenset(expand_verbs(v, subresource=sub))
            for sub, v in (subresource_verbs or {}).items()
        }

    @property
    def declared(self) -> dict[str, tuple[str, ...]]:
        """``{"": verbs, "status": verbs, ...}``, sorted."""
        out = {"": tuple(sorted(self._verbs))}
        out.update({sub: tuple(sorted(v)) for sub, v in sorted(self._subresource_verbs.items())})
        return out

    def _allowed(self, method: str, subresource: str | None = None) -> None:
        verb = METHOD_VERBS[method]
        allowed = (
            self._verbs
            if not subresource
            else self._subresource_verbs.get(subresource, frozenset())
        )
        if verb in allowed:
            return
        resource = self.resource
        rbac = resource.plural if not subresource else f"{resource.plural}/{subresource}"
        where = (
            "verbs"
            if not subresource
            else ("status_verbs" if subresource == "status" else "subresource verbs")
        )
        group = resource.group or "core"
        raise UndeclaredVerb(
            f"{method}() needs {verb!r} on {rbac!r} (API group {group!r}), which this client did not declare: "
            f"add {verb!r} to {where}= where it is made (factory.client({resource.kind}, {where}=...)), "
            "then regenerate the RBAC (python -m pyinformers rbac ...)"
        )

    # Each method checks its verb, then is the plain client's.
    def get(self, *args: Any, **kwargs: Any) -> ObjectT:
        self._allowed("get")
        return super().get(*args, **kwargs)

    def list(self, *args: Any, **kwargs: Any) -> ListPage[ObjectT]:
        self._allowed("list")
        return super().list(*args, **kwargs)

    def list_all(self, *args: Any, **kwargs: Any) -> ListPage[ObjectT]:
        self._allowed("list_all")
        return super().list_all(*args, **kwargs)

    def watch(self, *args: Any, **kwargs: Any) -> WatchStream:
        self._allowed("watch")
        return super().watch(*args, **kwargs)

    def create(self, *args: Any, **kwargs: Any) -> ObjectT:
        self._allowed("create")
        return super().create(*args, **kwargs)

    def replace(self, *args: Any, **kwargs: Any) -> ObjectT:
        self._allowed("replace")
        return super().replace(*args, **kwargs)

    def replace_status(self, *args: Any, **kwargs: Any) -> ObjectT:
        self._allowed("replace_status", "status")
        return super().replace_status(*args, **kwargs)

    def patch(self, *args: Any, **kwargs: Any) -> ObjectT:
        self._allowed("patch", kwargs.get("subresource"))
        return super().patch(*args, **kwargs)

    def apply(self, *args: Any, **kwargs: Any) -> dict:
        self._allowed("apply")
        return super().apply(*args, **kwargs)

    def apply_status(self, *args: Any, **kwargs: Any) -> dict:
        self._allowed("apply_status", "status")
        return super().apply_status(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> dict:
        self._allowed("delete")
        return super().delete(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<DeclaredClient {self.resource} {self.declared}>"


def _scope(resource: Resource[Any], namespace: str | None) -> str | None:
    """The namespace a grant on ``resource`` is about (None: cluster-wide)."""
    if not resource.namespaced:
        return None
    return namespace or None


def permission_advice(resource: Resource[Any], verb: str, namespace: str | None = None) -> str:
    """What to add to the RBAC so that ``verb`` on ``resource`` in ``namespace`` (None: all) is allowed.

    One sentence naming the verb, the rule (API group and resource) and the
    Role (in that namespace) or ClusterRole that must hold it.
    """
    ns = _scope(resource, namespace)
    rule = f'apiGroups: ["{resource.group}"], resources: ["{resource.plural}"]'
    holder = (
        f'the Role the controller\'s ServiceAccount is bound to in namespace "{ns}"'
        if ns
        else "the ClusterRole the controller's ServiceAccount is bound to (a ClusterRoleBinding)"
    )
    return (
        f'add "{verb}" to the verbs of the rule {{{rule}}} in {holder} '
        "(python -m pyinformers rbac <module> prints every rule the controller needs)"
    )


class MissingPermission(Forbidden):
    """A permission the controller will need and does not have, found before the server refused it.

    Raised by nobody: a reflector hands it to ``on_watch_error`` (a Manager
    then refuses to start, as for any 403) and logs it. ``verb``,
    ``resource`` and ``namespace`` (None: cluster-wide) say what is missing;
    the message also says why it matters (``why``) and what to add.
    """

    def __init__(
        self, resource: Resource[Any], verb: str, namespace: str | None = None, *, why: str = ""
    ) -> None:
        ns = _scope(resource, namespace)
        where = f'in namespace "{ns}"' if ns else "cluster-wide"
        group = f'"{resource.group}"' if resource.group else '"" (core)'
        message = f"this client may not {verb} {resource.plural} (API group {group}) {where}"
        if why:
            message += f": {why}"
        message += f"; {permission_advice(resource, verb, namespace)}"
        super().__init__(message, reason="Forbidden")
        self.resource = resource
        self.verb = verb
        self.namespace = ns


def review_access(
    api_client: Any,
    resource: Resource[Any],
    verb: str,
    namespace: str | None = None,
    *,
    label_selector: str | None = None,
    field_selector: str | None = None,
    timeout: float = 10.0,
) -> bool | None:
    """Whether the server allows this client ``verb`` on ``resource`` in ``namespace`` (None: all namespaces).

    One SelfSubjectAccessReview (every authenticated user may make one).
    Returns None when the server cannot say: it does not serve the review
    (404/405, as the embedded test server), or refuses it (403). Selectors
    (the query forms) are passed along for authorizers that decide by them.
    Other errors (network, 5xx) propagate.
    """
    attributes: dict[str, Any] = {
        "group": resource.group,
        "resource": resource.plural,
        "verb": verb,
    }
    ns = _scope(resource, namespace)
    if ns:
        attributes["namespace"] = ns
    if label_selector:
        attributes["labelSelector"] = {"rawSelector": label_selector}
    if field_selector:
        attributes["fieldSelector"] = {"rawSelector": field_selector}
    review = {
        "apiVersion": SELF_SUBJECT_ACCESS_REVIEWS.api_version,
        "kind": SELF_SUBJECT_ACCESS_REVIEWS.kind,
        "spec": {"resourceAttributes": attributes},
    }
    try:
        answer = ResourceClient(
            api_client, SELF_SUBJECT_ACCESS_REVIEWS, request_timeout=timeout
        ).create(review)
    except (NotFound, MethodNotAllowed, Forbidden):
        return None
    status = answer.get("status") if isinstance(answer, dict) else None
    if not isinstance(status, dict):
        return None
    return bool(status.get("allowed"))
