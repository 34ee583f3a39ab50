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
from collections.abc import Callable

from pyinformers.testing.apiserver._crd import initial_status
from pyinformers.testing.apiserver._objects import NAMESPACE_FINALIZER
from pyinformers.testing.apiserver._registry import Registry, ResourceType
from pyinformers.testing.apiserver._status import invalid

__all__ = [
    "defaults_on_create",
    "create_defaults",
    "apply_defaults",
    "namespace_contents",
    "ROOT_CA_CONFIGMAP",
]

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
                "metadata": {
                    "name": ROOT_CA_CONFIGMAP,
                    "annotations": {"kubernetes.io/description": _ROOT_CA_DESCRIPTION},
                },
                "data": {"ca.crt": _ROOT_CA_PEM},
            },
        ),
        ("serviceaccounts", {"metadata": {"name": "default"}}),
    ]


def defaults_on_create(registry: Registry, rt: ResourceType, obj: dict, timestamp: str) -> None:
    """Fill in what the server sets on create, once it is sure to store the object.

    A namespace's finalizer and phase; a CRD's defaults and status (and serves the CRD).
    """
    if rt.storage_key == "/namespaces":
        obj.setdefault("spec", {}).setdefault("finalizers", [NAMESPACE_FINALIZER])
        obj["status"] = {"phase": "Active"}
        obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = obj["metadata"][
            "name"
        ]
    elif rt.storage_key == "apiextensions.k8s.io/customresourcedefinitions":
        spec = obj["spec"]  # validated before: a dict with names and versions
        names = spec["names"]
        names.setdefault("singular", str(names.get("kind", "")).lower())
        names.setdefault("listKind", f"{names.get('kind', '')}List")
        spec.setdefault("conversion", {"strategy": "None"})
        try:
            registry.install_crd(obj)
        except ValueError as exc:
            raise invalid(
                rt.kind,
                rt.group,
                obj["metadata"]["name"],
                [("FieldValueInvalid", "spec", str(exc))],
            ) from None
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
        "strategy": {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"},
        },
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
        "updateStrategy": {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0},
        },
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


_DEFAULT_TOLERATIONS = [
    {
        "key": f"node.kubernetes.io/{taint}",
        "operator": "Exists",
        "effect": "NoExecute",
        "tolerationSeconds": 300,
    }
    for taint in ("not-ready", "unreachable")
]
_QOS_RESOURCES = ("cpu", "memory")


def _qos_class(spec: dict) -> str:
    """The Pod's QoS class from its containers' cpu and memory requests and limits."""
    containers = [
        c
        for f in ("containers", "initContainers")
        for c in spec.get(f) or ()
        if isinstance(c, dict)
    ]
    any_set, guaranteed = False, True
    for container in containers:
        resources = container.get("resources") or {}
        requests = {
            k: v
            for k, v in (resources.get("requests") or {}).items()
            if k in _QOS_RESOURCES and str(v) not in ("0", "")
        }
        limits = {
            k: v
            for k, v in (resources.get("limits") or {}).items()
            if k in _QOS_RESOURCES and str(v) not in ("0", "")
        }
        any_set = any_set or bool(requests or limits)
        if set(limits) != set(_QOS_RESOURCES) or any(
            str(requests.get(k)) != str(v) for k, v in limits.items()
        ):
            guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _pod_on_create(pod: dict) -> None:
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("priority", 0)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    tolerations = spec.setdefault("tolerations", [])
    if isinstance(tolerations, list):
        present = {
            t.get("key")
            for t in tolerations
            if isinstance(t, dict) and t.get("effect") in ("NoExecute", None)
        }
        tolerations.extend(dict(t) for t in _DEFAULT_TOLERATIONS if t["key"] not in present)
    for container in [
        c
        for f in ("containers", "initContainers")
        for c in spec.get(f) or ()
        if isinstance(c, dict)
    ]:
        resources = container.get("resources")
        if isinstance(resources, dict) and isinstance(resources.get("limits"), dict):
            requests = resources.setdefault("requests", {})
            for name, value in resources["limits"].items():
                requests.setdefault(name, value)  # requests default to limits
    pod["status"] = {"phase": "Pending", "qosClass": _qos_class(spec)}


def _service_on_create(service: dict) -> None:
    spec = service.get("spec")
    if not isinstance(spec, dict):
        return
    service["status"] = {"loadBalancer": {}}
    if spec.get("type") == "ExternalName":
        return
    headless = spec.get("clusterIP") == "None"
    if headless:
        spec.setdefault("clusterIPs", ["None"])
    dual = headless and not spec.get("selector")
    spec.setdefault("ipFamilies", ["IPv4", "IPv6"] if dual else ["IPv4"])
    spec.setdefault("ipFamilyPolicy", "RequireDualStack" if dual else "SingleStack")


def _service_defaults(service: dict) -> None:
    spec = service.get("spec")
    if not isinstance(spec, dict):
        return
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    if spec["type"] != "ExternalName":
        spec.setdefault("internalTrafficPolicy", "Cluster")
    for port in spec.get("ports") or ():
        if isinstance(port, dict):
            port.setdefault("protocol", "TCP")
            if "port" in port:
                port.setdefault("targetPort", port["port"])


def create_defaults(rt: ResourceType, obj: dict, cluster_ip: Callable[[], str]) -> None:
    """What a create fills in beyond :func:`apply_defaults` (dry runs included).

    A Pod's status (``Pending`` and its QoS class) and what admission adds to
    it (priority, the default tolerations, requests from limits); a Service's
    status, IP families and a cluster IP from ``cluster_ip()`` when it needs one.
    """
    if rt.storage_key == "/pods":
        _pod_on_create(obj)
    elif rt.storage_key == "/services":
        _service_on_create(obj)
        spec = obj.get("spec")
        if (
            isinstance(spec, dict)
            and spec.get("type") != "ExternalName"
            and not spec.get("clusterIP")
        ):
            spec["clusterIP"] = cluster_ip()
            spec["clusterIPs"] = [spec["clusterIP"]]


def apply_defaults(rt: ResourceType, obj: dict) -> None:
    """Fill in the defaults a real server gives built-in kinds (on every create and update).

    Secrets: ``type: Opaque`` and ``stringData`` folded into base64 ``data``;
    Pods and the pod templates of workloads: the pod and container defaults;
    Services: type, session affinity, traffic policy, port protocol and target;
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
        if isinstance(obj.get("spec"), dict):
            obj["spec"].setdefault(
                "enableServiceLinks", True
            )  # a Pod's default (SetDefaults_Pod), not a template's
    elif key == "/services":
        _service_defaults(obj)
    elif key in _WORKLOAD_DEFAULTS or key == "batch/jobs":
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        for name, value in _WORKLOAD_DEFAULTS.get(key, {}).items():
            spec.setdefault(name, json.loads(json.dumps(value)))
        template = spec.get("template")
        if isinstance(template, dict):
            _default_pod_spec(template.get("spec"), job=key == "batch/jobs")
