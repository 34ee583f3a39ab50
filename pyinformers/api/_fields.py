"""Which fields each built-in resource can be selected by (field selectors), as kube-apiserver serves them.

Every resource can be selected by ``metadata.name`` and, when namespaced, by
``metadata.namespace``; some built-in resources offer more
(:data:`SELECTABLE_FIELDS`). A field selector naming any other field is
answered 400 by the server on every list and watch, forever: an informer
built with one could never sync. :func:`check_selectable` refuses it up
front, with the fields the resource does offer.

Custom resources offer what their CRD's ``selectableFields`` declare (1.32+),
which a :class:`~pyinformers.api.Resource` does not carry: their selectors
are left to the server.

The embedded test server (``pyinformers.testing``) answers with the same
table, so a selector refused here is refused there too.

Pure data and functions; thread-safe.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "OBJECT_FIELDS",
    "SELECTABLE_FIELDS",
    "BUILTIN_GROUPS",
    "check_selectable",
    "selectable_fields",
]

#: Fields every namespaced resource can be selected by.
OBJECT_FIELDS = ("metadata.name", "metadata.namespace")

#: ``group/plural`` (``/pods`` for the core group) -> the fields it can be selected by, where they
#: are more than its name and namespace (cluster-scoped namespaces and nodes take no namespace).
SELECTABLE_FIELDS: dict[str, tuple[str, ...]] = {
    "/secrets": OBJECT_FIELDS + ("type",),
    "/pods": OBJECT_FIELDS
    + (
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.podIPs",
        "status.nominatedNodeName",
    ),
    "/services": OBJECT_FIELDS + ("spec.clusterIP", "spec.type"),
    "/namespaces": ("metadata.name", "status.phase"),
    "/nodes": ("metadata.name", "spec.unschedulable"),
    "/events": OBJECT_FIELDS
    + (
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    ),
    "events.k8s.io/events": OBJECT_FIELDS
    + (
        "regarding.kind",
        "regarding.name",
        "regarding.namespace",
        "regarding.uid",
        "regarding.apiVersion",
        "regarding.resourceVersion",
        "regarding.fieldPath",
        "reason",
        "type",
        "reportingController",
    ),
    "batch/jobs": OBJECT_FIELDS + ("status.successful",),
}

#: API groups of kube-apiserver's own resources (custom resources live elsewhere).
BUILTIN_GROUPS = frozenset(
    {
        "",
        "apps",
        "batch",
        "autoscaling",
        "policy",
        "rbac.authorization.k8s.io",
        "networking.k8s.io",
        "coordination.k8s.io",
        "discovery.k8s.io",
        "events.k8s.io",
        "storage.k8s.io",
        "scheduling.k8s.io",
        "node.k8s.io",
        "certificates.k8s.io",
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
        "apiregistration.k8s.io",
        "flowcontrol.apiserver.k8s.io",
        "resource.k8s.io",
    }
)


def selectable_fields(group: str, plural: str, namespaced: bool = True) -> tuple[str, ...]:
    """The fields a built-in resource can be selected by."""
    fields = SELECTABLE_FIELDS.get(f"{group}/{plural}")
    if fields is not None:
        return fields
    return OBJECT_FIELDS if namespaced else ("metadata.name",)


def check_selectable(resource: Any, field_selector: Any) -> None:
    """Raise ValueError when ``field_selector`` (a parsed FieldSelector) names a field ``resource`` does not serve.

    Only built-in resources are checked (see the module docstring).
    """
    if field_selector is None or resource.group not in BUILTIN_GROUPS:
        return
    allowed = selectable_fields(resource.group, resource.plural, resource.namespaced)
    for requirement in field_selector.requirements:
        if requirement.field not in allowed:
            raise ValueError(
                f"field selector {str(field_selector)!r} cannot be served for {resource}: "
                f"{requirement.field!r} is not a selectable field (it offers {', '.join(allowed)})"
            )
