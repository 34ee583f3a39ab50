"""What the in-process API server fills in when an object is created.

:func:`apply_defaults` fills in what the real server's defaulting gives
built-in kinds on every write (a Secret's type, pod and workload defaults).
Namespaces get the ``kubernetes`` finalizer, phase ``Active`` and the
``kubernetes.io/metadata.name`` label; a CustomResourceDefinition is
installed in the registry (so its resources are served) and gets its status.

Not thread-safe by itself: called under the store lock.
"""

from __future__ import annotations

import base64
import json

from pyinformers.testing.crd import initial_status
from pyinformers.testing.objects import NAMESPACE_FINALIZER
from pyinformers.testing.registry import Registry, ResourceType
from pyinformers.testing.status import invalid

__all__ = ["defaults_on_create", "apply_defaults", "namespace_contents", "ROOT_CA_CONFIGMAP"]

ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
_ROOT_CA_DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints "
    "such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across "
    "distributions of Kubernetes clusters."
)
#: a placeholder CA bundle: the in-process server serves plain HTTP or its own self-signed certificate
_ROOT_CA_PEM = "-----BEGIN CERTIFICATE-----\npyinformers.testing has no cluster CA\n-----END CERTIFICATE-----\n"


def namespace_contents() -> list[tuple[str, dict]]:
    """(plural, body) of what kube-controller-manager creates in every namespace.

    The ``kube-root-ca.crt`` ConfigMap (root-CA publisher) and the ``default``
    ServiceAccount (serviceaccount controller). The real controllers add them a
    moment after the namespace; this server adds them right after it.
    """
    return [
        (
            "configmaps",
            {
                "metadata": {"name": ROOT_CA_CONFIGMAP, "annotations": {"kubernetes.io/description": _ROOT_CA_DESCRIPTION}},
                "data": {"ca.crt": _ROOT_CA_PEM},
            },
        ),
        ("serviceaccounts", {"metadata": {"name": "default"}}),
    ]


def defaults_on_create(registry: Registry, rt: ResourceType, obj: dict, timestamp: str) -> None:
    """Fill in what the server sets on create (namespace finalizer and phase, a CRD's defaults and status; serves a CRD)."""
    if rt.storage_key == "/namespaces":
        obj.setdefault("spec", {}).setdefault("finalizers", [NAMESPACE_FINALIZER])
        obj["status"] = {"phase": "Active"}
        obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = obj["metadata"]["name"]
    elif rt.storage_key == "apiextensions.k8s.io/customresourcedefinitions":
        spec = obj["spec"]  # validated before: a dict with names and versions
        names = spec["names"]
        names.setdefault("singular", str(names.get("kind", "")).lower())
        names.setdefault("listKind", f"{names.get('kind', '')}List")
        spec.setdefault("conversion", {"strategy": "None"})
        try:
            registry.install_crd(obj)
        except ValueError as exc:
            raise invalid(rt.kind, rt.group, obj["metadata"]["name"], [("FieldValueInvalid", "spec", str(exc))]) from None
        obj["status"] = initial_status(obj)


# -- defaulting of built-in kinds (what the real server's defaulting functions fill in) ----------

_POD_SPEC_DEFAULTS = {
    "restartPolicy": "Always",
    "terminationGracePeriodSeconds": 30,
    "dnsPolicy": "ClusterFirst",
    "securityContext": {},
    "schedulerName": "default-scheduler",
}
_CONTAINER_DEFAULTS = {
    "resources": {},
    "terminationMessagePath": "/dev/termination-log",
    "terminationMessagePolicy": "File",
}
_WORKLOAD_DEFAULTS: dict[str, dict[str, object]] = {
    "apps/deployments": {
        "replicas": 1,
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
        "revisionHistoryLimit": 10,
        "progressDeadlineSeconds": 600,
    },
    "apps/replicasets": {"replicas": 1},
    "apps/statefulsets": {
        "replicas": 1,
        "podManagementPolicy": "OrderedReady",
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
        "revisionHistoryLimit": 10,
    },
    "apps/daemonsets": {
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
        "revisionHistoryLimit": 10,
    },
}


def _image_pull_policy(image: object) -> str:
    if not isinstance(image, str):
        return "IfNotPresent"
    last = image.rsplit("/", 1)[-1]
    if "@" in last:
        return "IfNotPresent"
    tag = last.partition(":")[2]
    return "Always" if tag in ("", "latest") else "IfNotPresent"


def _default_pod_spec(spec: object, *, job: bool = False) -> None:
    if not isinstance(spec, dict):
        return
    for key, value in _POD_SPEC_DEFAULTS.items():
        if job and key == "restartPolicy":
            continue
        spec.setdefault(key, dict(value) if isinstance(value, dict) else value)
    for field in ("containers", "initContainers"):
        for container in spec.get(field) or ():
            if not isinstance(container, dict):
                continue
            for key, value in _CONTAINER_DEFAULTS.items():
                container.setdefault(key, dict(value) if isinstance(value, dict) else value)
            container.setdefault("imagePullPolicy", _image_pull_policy(container.get("image")))
            for port in container.get("ports") or ():
                if isinstance(port, dict):
                    port.setdefault("protocol", "TCP")


def apply_defaults(rt: ResourceType, obj: dict) -> None:
    """Fill in the defaults a real server gives built-in kinds (on every create and update).

    Secrets: ``type: Opaque`` and ``stringData`` folded into base64 ``data``;
    Pods and the pod templates of workloads: the pod and container defaults;
    Deployments, ReplicaSets, StatefulSets, DaemonSets: their spec defaults.
    """
    key = rt.storage_key
    if key == "/secrets":
        obj.setdefault("type", "Opaque")
        string_data = obj.pop("stringData", None)
        if isinstance(string_data, dict):
            data = obj.setdefault("data", {})
            if isinstance(data, dict):
                for name, value in string_data.items():
                    if isinstance(value, str):
                        data[name] = base64.b64encode(value.encode()).decode()
    elif key == "/pods":
        _default_pod_spec(obj.get("spec"))
    elif key in _WORKLOAD_DEFAULTS or key == "batch/jobs":
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        for name, value in _WORKLOAD_DEFAULTS.get(key, {}).items():
            spec.setdefault(name, json.loads(json.dumps(value)))
        template = spec.get("template")
        if isinstance(template, dict):
            _default_pod_spec(template.get("spec"), job=key == "batch/jobs")
