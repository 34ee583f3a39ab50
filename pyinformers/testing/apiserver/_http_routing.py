"""Resource paths of the embedded API server: what a URL names, and which verb a request is.

Owns the URL layout (as the real server's)::

    /api/v1[/namespaces/{ns}]/{plural}[/{name}[/{subresource}]]
    /apis/{group}/{version}[/namespaces/{ns}]/{plural}[/{name}[/{subresource}]]

:func:`parse_path` reads a path into a :class:`PathInfo` without looking
anything up (what RBAC decides on); :func:`resolve` then finds the served
resource in the registry (a :class:`Route`, or the real server's 404s: JSON for
the built-in groups, the plain-text :class:`PageNotFound` otherwise);
:func:`request_verb` names the request's verb from its method and path.

Invariants: segments are split before percent-decoding, so an encoded slash
never separates segments (it names nothing: 404); a :class:`Route` only
names a subresource its resource has.

Thread-safety: pure functions over immutable values; the registry takes its
own lock.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote

from pyinformers.testing.apiserver._options import go_bool
from pyinformers.testing.apiserver._registry import Registry, ResourceType
from pyinformers.testing.apiserver._scale import SCALABLE
from pyinformers.testing.apiserver._status import bad_request, method_not_allowed, not_found

__all__ = ["PageNotFound", "PathInfo", "Route", "parse_path", "request_verb", "resolve"]


class PageNotFound(Exception):
    """No API serves the path: the real server's plain-text 404."""


@dataclass(frozen=True)
class Route:
    resource: ResourceType
    namespace: str | None
    name: str | None
    subresource: str | None
    watch_prefix: bool = False  # came by the deprecated /watch/ path


@dataclass(frozen=True)
class PathInfo:
    """What a resource path names, before looking anything up (what RBAC decides on)."""

    group: str
    version: str
    namespace: str | None
    plural: str
    name: str | None
    subresource: str | None
    watch_prefix: bool


def parse_path(raw_path: str) -> PathInfo | None:
    """Parse ``/api/v1/...`` and ``/apis/{group}/{version}/...`` resource paths; None for anything else.

    Segments are split before percent-decoding, so an encoded slash stays
    inside its segment (and then names nothing: 404).
    """
    parts = [unquote(p) for p in raw_path.split("/") if p]
    if len(parts) >= 3 and parts[0] == "api" and parts[1] == "v1":
        group, version, rest = "", "v1", parts[2:]
    elif len(parts) >= 4 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    watch_prefix = bool(rest) and rest[0] == "watch"  # the deprecated /watch/ prefix
    if watch_prefix:
        rest = rest[1:]
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in ("status", "finalize"):
        namespace, rest = rest[1], rest[2:]
    elif len(rest) == 2 and rest[0] == "namespaces" and watch_prefix:
        pass
    if not rest or len(rest) > 3:
        return None
    return PathInfo(
        group,
        version,
        namespace,
        rest[0],
        rest[1] if len(rest) >= 2 else None,
        rest[2] if len(rest) == 3 else None,
        watch_prefix,
    )


def resolve(registry: Registry, info: PathInfo) -> Route:
    """The served resource a parsed path names (404 when none)."""
    rt = registry.lookup(info.group, info.version, info.plural)
    if rt is None:
        if info.group and not registry.is_builtin_group(info.group):
            raise PageNotFound()  # custom resources' groups answer unknown paths in plain text
        raise not_found("", "", None)
    if info.namespace is not None and not rt.namespaced:
        raise not_found("", "", None)
    if any(value is not None and "/" in value for value in (info.name, info.namespace)):
        raise not_found("", "", None)  # an encoded slash: no such path (not "object not found")
    for what, value in (("Name", info.name), ("Namespace", info.namespace)):
        if value in (".", ".."):
            raise bad_request(f"{what} parameter invalid: \"{value}\": may not be '{value}'")
    sub = info.subresource
    if sub == "status" and not rt.has_status and info.name:
        raise not_found(rt.plural, rt.group, info.name)  # the real server names the object
    if sub is not None and sub not in _subresources(rt):
        raise not_found("", "", None)
    return Route(rt, info.namespace, info.name, sub, info.watch_prefix)


def _subresources(rt: ResourceType) -> tuple[str, ...]:
    subs: tuple[str, ...] = ()
    if rt.has_status:
        subs += ("status",)
    if rt.storage_key == "/namespaces":
        subs += ("finalize",)
    if rt.storage_key in SCALABLE:
        subs += ("scale",)
    if rt.storage_key == "/serviceaccounts":
        subs += ("token",)
    return subs


def request_verb(method: str, info: PathInfo, query: dict) -> str:
    """The request's verb (``list``, ``watch``, ``create``, ...); 405 when the path has none for ``method``."""
    watching = info.watch_prefix or bool(go_bool(query.get("watch")))
    if info.name is None:
        verbs = {
            "GET": "watch" if watching else "list",
            "POST": "create",
            "DELETE": "deletecollection",
        }
    else:
        verbs = {
            "GET": "watch" if info.watch_prefix else "get",
            "PUT": "update",
            "PATCH": "patch",
            "DELETE": "delete",
        }
        if info.subresource:
            verbs = {"GET": "get", "PUT": "update", "PATCH": "patch"}
            if info.subresource == "token":
                verbs = {"POST": "create"}
    found = verbs.get(method)
    if found is None:
        raise method_not_allowed()
    return found
