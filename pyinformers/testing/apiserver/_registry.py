"""The resource registry of the in-process API server, and discovery.

A :class:`ResourceType` describes one served resource in one version (group,
version, plural, kind, scope, whether it has a ``/status`` subresource). The
:class:`Registry` starts with the built-in resources pyinformers needs and
grows and shrinks as CustomResourceDefinitions are created and deleted: every
served version of a CRD becomes a ``ResourceType``; all versions of one
resource share one storage key (``group/plural``), so an object written
through one version is visible through the others (with its ``apiVersion``
rewritten; the server converts nothing else).

The discovery documents (``/api``, ``/api/v1``, ``/apis``, ``/apis/{group}``,
``/apis/{group}/{version}``) are computed from the registry on each request.

Thread-safety: every method takes the registry's lock; ``ResourceType`` is a
frozen value.
"""

from __future__ import annotations

import base64
import hashlib
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

from pyinformers.api._resource import join_group_version

__all__ = ["ResourceType", "Registry", "BUILTIN_RESOURCES", "resource_types_from_crd"]

_ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
_STATUS_VERBS = ("get", "patch", "update")
_CUSTOM_VERBS = (
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "create",
    "update",
    "watch",
)  # as the real server lists them
_SCALABLE = frozenset({"apps/deployments", "apps/replicasets", "apps/statefulsets"})


def storage_version_hash(group: str, version: str, kind: str) -> str:
    """Discovery's ``storageVersionHash``: the first 8 bytes of SHA-256 of ``group/version/kind``, base64."""
    digest = hashlib.sha256(f"{group}/{version}/{kind}".encode()).digest()[:8]
    return base64.b64encode(digest).decode()


@dataclass(frozen=True)
class ResourceType:
    """One resource served in one group/version.

    ``storage_key`` (``group/plural``) names the objects' home in the store; it
    is the same for every version of a resource.
    """

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True
    singular: str = ""
    short_names: tuple[str, ...] = ()
    has_status: bool = False
    crd_name: str | None = field(default=None, compare=False)
    #: whether objects carry ``metadata.generation`` (kinds with a spec do; ConfigMaps,
    #: Secrets, Namespaces, Leases, ... do not, on a real server either)
    has_generation: bool = False
    #: discovery categories (``kubectl get all`` lists the ``all`` category)
    categories: tuple[str, ...] = ()

    @property
    def api_version(self) -> str:
        return join_group_version(self.group, self.version)

    @property
    def group_version(self) -> str:
        return self.api_version

    @property
    def storage_key(self) -> str:
        return f"{self.group}/{self.plural}"

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def is_custom(self) -> bool:
        return self.crd_name is not None

    def __str__(self) -> str:
        return f"{self.api_version}/{self.plural}"

    def discovery_entries(self) -> list[dict]:
        """This resource's entries in an ``APIResourceList``: itself, then its subresources by name."""
        if self.is_custom:
            verbs = list(_CUSTOM_VERBS)
        elif self.storage_key == "/namespaces":
            verbs = [v for v in _ALL_VERBS if v != "deletecollection"]
        else:
            verbs = list(_ALL_VERBS)
        entry: dict = {
            "name": self.plural,
            "singularName": self.singular or self.kind.lower(),
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": verbs,
        }
        if self.short_names:
            entry["shortNames"] = list(self.short_names)
        if self.categories:
            entry["categories"] = list(self.categories)
        entry["storageVersionHash"] = storage_version_hash(self.group, self.version, self.kind)
        entries = [entry]
        for sub, kind_info, sub_verbs in self._subresources():
            sub_entry: dict = {
                "name": f"{self.plural}/{sub}",
                "singularName": "",
                "namespaced": self.namespaced,
            }
            sub_entry.update(kind_info)
            sub_entry["verbs"] = list(sub_verbs)
            entries.append(sub_entry)
        return entries

    def aggregated_entry(self) -> dict:
        """This resource in aggregated discovery (its subresources nested)."""
        main = self.discovery_entries()[0]
        entry: dict = {
            "resource": self.plural,
            "responseKind": {"group": "", "version": "", "kind": self.kind},
            "scope": "Namespaced" if self.namespaced else "Cluster",
            "singularResource": main["singularName"],
            "verbs": main["verbs"],
        }
        for key in ("shortNames", "categories"):
            if key in main:
                entry[key] = main[key]
        subresources = []
        for sub, kind_info, verbs in self._subresources():
            kind = {
                "group": kind_info.get("group", ""),
                "version": kind_info.get("version", ""),
                "kind": kind_info["kind"],
            }
            subresources.append({"subresource": sub, "responseKind": kind, "verbs": list(verbs)})
        if subresources:
            entry["subresources"] = subresources
        return entry

    def _subresources(self) -> list[tuple[str, dict, tuple[str, ...]]]:
        """(name, group/version/kind fields, verbs) of each subresource served, sorted by name."""
        subs: list[tuple[str, dict, tuple[str, ...]]] = []
        if self.storage_key == "/namespaces":
            subs.append(("finalize", {"kind": self.kind}, ("update",)))
        if self.storage_key in _SCALABLE:
            subs.append(
                ("scale", {"group": "autoscaling", "version": "v1", "kind": "Scale"}, _STATUS_VERBS)
            )
        if self.has_status:
            subs.append(("status", {"kind": self.kind}, _STATUS_VERBS))
        if self.storage_key == "/serviceaccounts":
            subs.append(
                (
                    "token",
                    {"group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest"},
                    ("create",),
                )
            )
        return sorted(subs, key=lambda s: s[0])


def _rt(
    group: str,
    version: str,
    plural: str,
    kind: str,
    *,
    namespaced: bool = True,
    short: tuple[str, ...] = (),
    status: bool = False,
    generation: bool = False,
    all_category: bool = False,
) -> ResourceType:
    return ResourceType(
        group,
        version,
        plural,
        kind,
        namespaced=namespaced,
        singular=kind.lower(),
        short_names=tuple(short),
        has_status=status,
        has_generation=generation,
        categories=("all",) if all_category else (),
    )


BUILTIN_RESOURCES: tuple[ResourceType, ...] = (
    _rt("", "v1", "namespaces", "Namespace", namespaced=False, short=("ns",), status=True),
    _rt("", "v1", "pods", "Pod", short=("po",), status=True, generation=True, all_category=True),
    _rt("", "v1", "services", "Service", short=("svc",), status=True, all_category=True),
    _rt("", "v1", "configmaps", "ConfigMap", short=("cm",)),
    _rt("", "v1", "secrets", "Secret"),
    _rt("", "v1", "events", "Event", short=("ev",)),
    _rt("", "v1", "nodes", "Node", namespaced=False, short=("no",), status=True),
    _rt("", "v1", "serviceaccounts", "ServiceAccount", short=("sa",)),
    _rt(
        "apps",
        "v1",
        "deployments",
        "Deployment",
        short=("deploy",),
        status=True,
        generation=True,
        all_category=True,
    ),
    _rt(
        "apps",
        "v1",
        "replicasets",
        "ReplicaSet",
        short=("rs",),
        status=True,
        generation=True,
        all_category=True,
    ),
    _rt(
        "apps",
        "v1",
        "statefulsets",
        "StatefulSet",
        short=("sts",),
        status=True,
        generation=True,
        all_category=True,
    ),
    _rt(
        "apps",
        "v1",
        "daemonsets",
        "DaemonSet",
        short=("ds",),
        status=True,
        generation=True,
        all_category=True,
    ),
    _rt("batch", "v1", "jobs", "Job", status=True, generation=True, all_category=True),
    _rt("coordination.k8s.io", "v1", "leases", "Lease"),
    _rt(
        "admissionregistration.k8s.io",
        "v1",
        "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration",
        namespaced=False,
        generation=True,
    ),
    _rt(
        "admissionregistration.k8s.io",
        "v1",
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
        namespaced=False,
        generation=True,
    ),
    _rt("events.k8s.io", "v1", "events", "Event", short=("ev",)),
    _rt(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        namespaced=False,
        short=("crd", "crds"),
        status=True,
        generation=True,
    ),
)


def resource_types_from_crd(crd: dict) -> list[ResourceType]:
    """The served versions of a CustomResourceDefinition as resource types.

    Raises ``ValueError`` naming the missing field when the CRD is incomplete.
    """
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group = spec.get("group")
    plural = names.get("plural")
    kind = names.get("kind")
    if not group or not plural or not kind:
        raise ValueError("spec.group, spec.names.plural and spec.names.kind are required")
    scope = spec.get("scope", "Namespaced")
    if scope not in ("Namespaced", "Cluster"):
        raise ValueError(f"spec.scope must be Namespaced or Cluster, not {scope!r}")
    versions = spec.get("versions") or []
    if not versions:
        raise ValueError("spec.versions must list at least one version")
    types = []
    crd_name = (crd.get("metadata") or {}).get("name") or f"{plural}.{group}"
    for version in versions:
        if not version.get("name"):
            raise ValueError("every entry of spec.versions needs a name")
        if not version.get("served", True):
            continue
        subresources = version.get("subresources") or spec.get("subresources") or {}
        types.append(
            ResourceType(
                group,
                version["name"],
                plural,
                kind,
                namespaced=scope == "Namespaced",
                singular=names.get("singular") or kind.lower(),
                short_names=tuple(names.get("shortNames") or ()),
                has_status="status" in subresources,
                crd_name=crd_name,
                has_generation=True,
                categories=tuple(c for c in names.get("categories") or () if isinstance(c, str)),
            )
        )
    return types


class Registry:
    """The resources the server serves, keyed by (group, version, plural).

    Invariant: each storage key has one kind and one scope across all its
    versions (a CRD cannot change them under the same name).
    """

    def __init__(self, resources: Iterable[ResourceType] = BUILTIN_RESOURCES) -> None:
        self._lock = threading.Lock()
        self._by_gvr: dict[tuple[str, str, str], ResourceType] = {}
        self._crds: dict[str, list[ResourceType]] = {}
        for rt in resources:
            self._by_gvr[(rt.group, rt.version, rt.plural)] = rt

    def __repr__(self) -> str:
        with self._lock:
            return f"<Registry resources={len(self._by_gvr)} crds={len(self._crds)}>"

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        with self._lock:
            return self._by_gvr.get((group, version, plural))

    def find(self, plural: str, group: str = "") -> ResourceType | None:
        """Any served version of ``group/plural`` (the preferred one for built-ins)."""
        with self._lock:
            for (g, _v, p), rt in self._by_gvr.items():
                if g == group and p == plural:
                    return rt
        return None

    def types_for_storage_key(self, storage_key: str) -> list[ResourceType]:
        with self._lock:
            return [rt for rt in self._by_gvr.values() if rt.storage_key == storage_key]

    def all(self) -> list[ResourceType]:
        with self._lock:
            return list(self._by_gvr.values())

    def group_versions(self, group: str) -> list[str]:
        with self._lock:
            seen: list[str] = []
            for g, v, _p in self._by_gvr:
                if g == group and v not in seen:
                    seen.append(v)
            return seen

    def is_builtin_group(self, group: str) -> bool:
        """Whether a built-in resource is served in ``group`` (not only custom resources)."""
        with self._lock:
            return any(g == group and not rt.is_custom for (g, _v, _p), rt in self._by_gvr.items())

    def install_crd(self, crd: dict) -> list[ResourceType]:
        """Serve (or re-serve, after an update) a CRD's versions; returns them.

        Raises ``ValueError`` when the CRD is malformed or its plural collides
        with a resource of another kind or scope.
        """
        types = resource_types_from_crd(crd)
        name = str(types[0].crd_name if types else (crd.get("metadata") or {}).get("name"))
        with self._lock:
            for rt in types:
                existing = self._by_gvr.get((rt.group, rt.version, rt.plural))
                if existing is not None and existing.crd_name != rt.crd_name:
                    raise ValueError(
                        f"{rt} is already served by {existing.crd_name or 'a built-in resource'}"
                    )
            for rt in self._crds.pop(name, []):
                self._by_gvr.pop((rt.group, rt.version, rt.plural), None)
            for rt in types:
                self._by_gvr[(rt.group, rt.version, rt.plural)] = rt
            self._crds[name] = types
        return types

    def uninstall_crd(self, crd_name: str) -> list[ResourceType]:
        with self._lock:
            types = self._crds.pop(crd_name, [])
            for rt in types:
                self._by_gvr.pop((rt.group, rt.version, rt.plural), None)
            return types

    # -- discovery -----------------------------------------------------------------

    def core_versions(self) -> dict:
        return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []}

    def resource_list(self, group: str, version: str) -> dict | None:
        with self._lock:
            types = [rt for (g, v, _p), rt in self._by_gvr.items() if g == group and v == version]
        if not types:
            return None
        resources: list[dict] = []
        for rt in sorted(types, key=lambda r: r.plural):
            resources.extend(rt.discovery_entries())
        if not group:  # the core group's list carries no apiVersion on a real server
            return {"kind": "APIResourceList", "groupVersion": version, "resources": resources}
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{group}/{version}",
            "resources": resources,
        }

    def api_group(self, group: str) -> dict | None:
        versions = self.group_versions(group)
        if not group or not versions:
            return None
        entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
        return {
            "kind": "APIGroup",
            "apiVersion": "v1",
            "name": group,
            "versions": entries,
            "preferredVersion": entries[0],
        }

    def aggregated_discovery(self, *, core: bool) -> dict:
        """``/api`` or ``/apis`` as aggregated discovery (``apidiscovery.k8s.io/v2`` ``APIGroupDiscoveryList``)."""
        with self._lock:
            types = list(self._by_gvr.values())
        groups: dict[str, dict[str, list[ResourceType]]] = {}
        for rt in types:
            if (rt.group == "") == core:
                groups.setdefault(rt.group, {}).setdefault(rt.version, []).append(rt)
        items = []
        for group, versions in groups.items():
            items.append(
                {
                    "metadata": {"name": group} if group else {},
                    "versions": [
                        {
                            "version": version,
                            "resources": [
                                rt.aggregated_entry() for rt in sorted(rts, key=lambda r: r.plural)
                            ],
                            "freshness": "Current",
                        }
                        for version, rts in versions.items()
                    ],
                }
            )
        return {
            "kind": "APIGroupDiscoveryList",
            "apiVersion": "apidiscovery.k8s.io/v2",
            "metadata": {},
            "items": items,
        }

    def api_group_list(self) -> dict:
        with self._lock:
            groups: list[str] = []
            for g, _v, _p in self._by_gvr:
                if g and g not in groups:
                    groups.append(g)
        items = []
        for g in groups:
            group = self.api_group(g)
            if group is not None:  # in a list, the groups carry no kind/apiVersion of their own
                items.append({k: v for k, v in group.items() if k not in ("kind", "apiVersion")})
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": items}
