"""The benchmarks' realistic Pod: what a ReplicaSet's Pod looks like on a real cluster.

About 5.1 KB of JSON with two ``managedFields`` entries (3.2 KB without them),
owned by a ReplicaSet (:func:`make_replica_set`) so a server's garbage
collector keeps it.
"""

from __future__ import annotations

import uuid

NAMESPACE = "bench"


def owner_uid(namespace: str) -> str:
    """The uid of the ReplicaSet owning the benchmark's Pods in ``namespace``."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"pyinformers-bench/{namespace}"))


def make_replica_set(namespace: str) -> dict:
    """The owner of the benchmark's Pods: it must exist, or the server's garbage collector deletes them."""
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {
            "name": "web-7d4b9c8f6d",
            "namespace": namespace,
            "uid": owner_uid(namespace),
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"pod-template-hash": "7d4b9c8f6d"}},
            "template": {"metadata": {"labels": {"pod-template-hash": "7d4b9c8f6d"}}, "spec": {}},
        },
    }


def make_pod(i: int, namespace: str = NAMESPACE, generation: int = 0) -> dict:
    """A Pod as a ReplicaSet's pod looks on a real cluster: ~5.1 KB of JSON, ~3.2 KB without managedFields."""
    name = f"web-7d4b9c8f6d-{i:06d}"
    uid = str(uuid.UUID(int=i + 1))
    ts = "2026-01-01T00:00:00Z"
    labels = {
        "app.kubernetes.io/name": "web",
        "app.kubernetes.io/instance": "web-prod",
        "app.kubernetes.io/component": "frontend",
        "pod-template-hash": "7d4b9c8f6d",
    }
    container = {
        "name": "web",
        "image": "registry.example.com/team/web:1.24.3",
        "imagePullPolicy": "IfNotPresent",
        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
        "env": [{"name": f"WEB_SETTING_{k}", "value": f"value-{k}"} for k in range(3)],
        "resources": {
            "limits": {"cpu": "500m", "memory": "512Mi"},
            "requests": {"cpu": "250m", "memory": "256Mi"},
        },
        "livenessProbe": {
            "httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"},
            "initialDelaySeconds": 10,
            "timeoutSeconds": 1,
            "periodSeconds": 10,
            "successThreshold": 1,
            "failureThreshold": 3,
        },
        "volumeMounts": [
            {"name": "config", "mountPath": "/etc/web"},
            {
                "name": "kube-api-access-x7k2p",
                "readOnly": True,
                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
            },
        ],
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File",
    }
    f_container = {
        ".": {},
        "f:image": {},
        "f:imagePullPolicy": {},
        "f:name": {},
        "f:env": {
            f'k:{{"name":"WEB_SETTING_{k}"}}': {".": {}, "f:name": {}, "f:value": {}}
            for k in range(3)
        },
        "f:resources": {
            ".": {},
            "f:limits": {".": {}, "f:cpu": {}, "f:memory": {}},
            "f:requests": {".": {}, "f:cpu": {}, "f:memory": {}},
        },
        "f:volumeMounts": {
            ".": {},
            'k:{"mountPath":"/etc/web"}': {".": {}, "f:mountPath": {}, "f:name": {}},
        },
    }
    managed = [
        {
            "manager": "kube-controller-manager",
            "operation": "Update",
            "apiVersion": "v1",
            "time": ts,
            "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {
                    "f:generateName": {},
                    "f:labels": {".": {}, **{f"f:{k}": {} for k in labels}},
                    "f:ownerReferences": {".": {}, f'k:{{"uid":"{uid}"}}': {}},
                },
                "f:spec": {
                    "f:containers": {'k:{"name":"web"}': f_container},
                    "f:dnsPolicy": {},
                    "f:enableServiceLinks": {},
                    "f:restartPolicy": {},
                    "f:schedulerName": {},
                    "f:securityContext": {},
                    "f:terminationGracePeriodSeconds": {},
                    "f:volumes": {".": {}},
                },
            },
        },
        {
            "manager": "kubelet",
            "operation": "Update",
            "apiVersion": "v1",
            "time": ts,
            "fieldsType": "FieldsV1",
            "subresource": "status",
            "fieldsV1": {
                "f:status": {
                    "f:conditions": {
                        f'k:{{"type":"{t}"}}': {
                            ".": {},
                            "f:lastProbeTime": {},
                            "f:lastTransitionTime": {},
                            "f:status": {},
                            "f:type": {},
                        }
                        for t in ("ContainersReady", "Initialized", "Ready", "PodScheduled")
                    },
                    "f:containerStatuses": {},
                    "f:hostIP": {},
                    "f:phase": {},
                    "f:podIP": {},
                    "f:podIPs": {".": {}},
                    "f:startTime": {},
                }
            },
        },
    ]
    ip = f"10.244.{(i // 250) % 250}.{i % 250}"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "generateName": "web-7d4b9c8f6d-",
            "namespace": namespace,
            "uid": uid,
            "creationTimestamp": ts,
            "labels": labels,
            "annotations": {"generation": str(generation)},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": "web-7d4b9c8f6d",
                    "uid": owner_uid(namespace),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
            "managedFields": managed,
        },
        "spec": {
            "volumes": [
                {"name": "config", "configMap": {"name": "web-config", "defaultMode": 420}},
                {
                    "name": "kube-api-access-x7k2p",
                    "projected": {
                        "defaultMode": 420,
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {
                                "configMap": {
                                    "name": "kube-root-ca.crt",
                                    "items": [{"key": "ca.crt", "path": "ca.crt"}],
                                }
                            },
                        ],
                    },
                },
            ],
            "containers": [container],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default",
            "serviceAccount": "default",
            "nodeName": f"node-{i % 50:03d}",
            "securityContext": {},
            "schedulerName": "default-scheduler",
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
                {
                    "key": "node.kubernetes.io/unreachable",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
            ],
            "enableServiceLinks": True,
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": ts}
                for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
            ],
            "hostIP": f"10.0.{i % 50}.1",
            "podIP": ip,
            "podIPs": [{"ip": ip}],
            "startTime": ts,
            "containerStatuses": [
                {
                    "name": "web",
                    "state": {"running": {"startedAt": ts}},
                    "lastState": {},
                    "ready": True,
                    "restartCount": generation,
                    "image": "registry.example.com/team/web:1.24.3",
                    "imageID": "registry.example.com/team/web@sha256:" + "ab" * 32,
                    "containerID": "containerd://" + f"{i:064x}",
                    "started": True,
                }
            ],
            "qosClass": "Burstable",
        },
    }
