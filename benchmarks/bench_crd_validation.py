"""What validating a custom resource costs the embedded server per write.

Creates of one ~1 KB custom resource through the REST layer (in process, no
HTTP), for three CRDs of the same kind that differ only in their schema:

* **baseline**: ``x-kubernetes-preserve-unknown-fields`` at the root (the
  server prunes, defaults and validates nothing);
* **structural**: a CronJob-like structural schema (about 30 fields:
  enums, bounds, defaults, an embedded resource, additionalProperties and
  items) walked by the five steps of the real server;
* **structural + CEL**: the same with five ``x-kubernetes-validations``
  rules (comparisons, a quantity, a URL, a regex, a list macro) and a
  transition rule evaluated on the updates.

Also the CEL step alone: one rule's evaluation, and what compiling a rule
costs on its first use (cached after). Ratios are against the baseline
write measured in the same run.
"""

from __future__ import annotations

import copy
import statistics
import time

from pyinformers.testing import ApiServer

WRITES = 2_000
REPEATS = 3
RULES = [
    {
        "rule": "self.replicas <= self.maxReplicas",
        "message": "replicas above maxReplicas",
        "fieldPath": ".replicas",
    },
    {"rule": "quantity(self.memory).isLessThan(quantity('4Gi'))", "message": "too much memory"},
    {
        "rule": "isURL(self.endpoint) && url(self.endpoint).getScheme() == 'https'",
        "message": "https only",
    },
    {"rule": "self.schedule.matches('^[*/0-9 ,-]+$')"},
    {"rule": "self.steps.all(s, s.name.size() > 0 && s.retries >= 0)"},
    {"rule": "self.schedule == oldSelf.schedule", "message": "schedule is immutable"},
]


def _schema(*, rules: bool) -> dict:
    step = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "retries": {"type": "integer", "default": 0, "minimum": 0},
        },
    }
    spec = {
        "type": "object",
        "required": ["schedule"],
        "properties": {
            "schedule": {"type": "string", "minLength": 1},
            "replicas": {"type": "integer", "minimum": 0, "default": 1},
            "maxReplicas": {"type": "integer", "minimum": 1, "default": 10},
            "memory": {"type": "string", "default": "1Gi"},
            "endpoint": {"type": "string", "format": "uri"},
            "policy": {
                "type": "string",
                "enum": ["Allow", "Forbid", "Replace"],
                "default": "Allow",
            },
            "suspend": {"type": "boolean"},
            "port": {"x-kubernetes-int-or-string": True},
            "labels": {
                "type": "object",
                "additionalProperties": {"type": "string", "maxLength": 63},
            },
            "steps": {"type": "array", "maxItems": 20, "items": step},
            "template": {
                "type": "object",
                "x-kubernetes-embedded-resource": True,
                "x-kubernetes-preserve-unknown-fields": True,
            },
            "jobTemplate": {
                "type": "object",
                "properties": {
                    "metadata": {"type": "object"},
                    "spec": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                        "properties": {
                            "backoffLimit": {"type": "integer", "default": 6},
                            "parallelism": {"type": "integer", "minimum": 0},
                        },
                    },
                },
            },
        },
    }
    if rules:
        spec["x-kubernetes-validations"] = copy.deepcopy(RULES)
    status = {
        "type": "object",
        "properties": {
            "active": {"type": "integer"},
            "lastScheduleTime": {"type": "string", "format": "date-time"},
        },
    }
    return {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec,
            "status": status,
        },
    }


def _crd(plural: str, schema: dict) -> dict:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.bench.example.com"},
        "spec": {
            "group": "bench.example.com",
            "scope": "Namespaced",
            "names": {
                "plural": plural,
                "singular": plural[:-1],
                "kind": plural.capitalize()[:-1],
                "listKind": plural.capitalize()[:-1] + "List",
            },
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                }
            ],
        },
    }


def _body(kind: str, name: str) -> dict:
    return {
        "apiVersion": "bench.example.com/v1",
        "kind": kind,
        "metadata": {"name": name, "labels": {"app": "bench"}},
        "spec": {
            "schedule": "*/5 * * * *",
            "replicas": 2,
            "memory": "512Mi",
            "endpoint": "https://example.com/hook",
            "port": "http",
            "labels": {"team": "a", "tier": "web"},
            "steps": [
                {"name": "fetch"},
                {"name": "build", "retries": 2},
                {"name": "push", "retries": 1},
            ],
            "template": {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "t"},
                "data": {"k": "v"},
            },
            "jobTemplate": {
                "spec": {
                    "template": {
                        "spec": {
                            "containers": [
                                {"name": "c", "image": "busybox", "args": ["echo", "hi"]}
                            ]
                        }
                    }
                }
            },
        },
    }


def _writes(server: ApiServer, plural: str, kind: str) -> tuple[float, float]:
    """(µs per create, µs per update) through the REST layer, best of REPEATS."""
    rt = server.registry.lookup("bench.example.com", "v1", plural)
    assert rt is not None
    creates, updates = [], []
    for repeat in range(REPEATS):
        names = [f"{plural}-{repeat}-{i}" for i in range(WRITES)]
        started = time.perf_counter()
        for name in names:
            server.rest.create(rt, "default", _body(kind, name))
        creates.append((time.perf_counter() - started) / WRITES * 1e6)
        started = time.perf_counter()
        for name in names:
            body = _body(kind, name)
            body["spec"]["suspend"] = True
            server.rest.update(rt, "default", name, body)
        updates.append((time.perf_counter() - started) / WRITES * 1e6)
    return min(creates), min(updates)


def _cel_alone() -> tuple[float, float]:
    """(µs per evaluation of one rule, ms to compile one new rule)."""
    from pyinformers.testing.apiserver import _cel

    schema = {
        "type": "object",
        "x-kubernetes-validations": [RULES[0]],
        "properties": {"replicas": {"type": "integer"}, "maxReplicas": {"type": "integer"}},
    }
    obj = {"replicas": 1, "maxReplicas": 2}
    _cel.cel_causes(schema, obj)
    n = 5_000
    started = time.perf_counter()
    for _ in range(n):
        _cel._walk(schema, obj, None, False, "", _cel.CelRuleResult())
    evaluation = (time.perf_counter() - started) / n * 1e6
    compiles = []
    for i in range(20):
        started = time.perf_counter()
        _cel._compile(f"self.replicas + {i} <= self.maxReplicas")
        compiles.append((time.perf_counter() - started) * 1e3)
    return evaluation, statistics.median(compiles)


def main() -> None:
    kinds = {
        "baselines": ("Baseline", {"type": "object", "x-kubernetes-preserve-unknown-fields": True}),
        "structurals": ("Structural", _schema(rules=False)),
        "ruleds": ("Ruled", _schema(rules=True)),
    }
    with ApiServer() as server:
        crds = server.registry.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        assert crds is not None
        for plural, (_, schema) in kinds.items():
            server.rest.create(crds, None, _crd(plural, schema))
        results = {plural: _writes(server, plural, kind) for plural, (kind, _) in kinds.items()}
    evaluation, compile_ms = _cel_alone()
    base_create, base_update = results["baselines"]
    print(
        f"{WRITES} writes of a ~1 KB custom resource per repeat, best of {REPEATS}, in process (no HTTP)"
    )
    print(f"{'schema':<44} {'create µs':>10} {'ratio':>7} {'update µs':>10} {'ratio':>7}")
    labels = {
        "baselines": "baseline: preserve-unknown-fields root",
        "structurals": "structural (~30 fields)",
        "ruleds": "structural + 5 CEL rules (+1 transition)",
    }
    for plural, (create, update) in results.items():
        print(
            f"{labels[plural]:<44} {create:>10.1f} {create / base_create:>7.2f} {update:>10.1f} {update / base_update:>7.2f}"
        )
    ruled_create, ruled_update = results["ruleds"]
    structural_create, structural_update = results["structurals"]
    print(
        f"CEL per validated write: create +{ruled_create - structural_create:.1f} µs, update +{ruled_update - structural_update:.1f} µs"
    )
    print(
        f"one rule evaluated alone: {evaluation:.1f} µs; a new rule's first compile: {compile_ms:.2f} ms (cached after)"
    )


if __name__ == "__main__":
    main()
