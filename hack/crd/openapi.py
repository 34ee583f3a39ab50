#!/usr/bin/env python3
"""Regenerate the built-in types: the OpenAPI extract and the typed views made from it.

    python hack/crd/openapi.py --fetch   # start a real control plane (make envtest), read its
                                         # /openapi/v3, write pyinformers/crd/_openapi.json.gz,
                                         # then regenerate pyinformers/k8s.py
    python hack/crd/openapi.py           # regenerate pyinformers/k8s.py from the shipped extract

The extract holds the component schemas reachable from the kinds of
pyinformers.resources (and a few types offered for specs: meta/v1 Condition
...), with each ``$ref`` shortened to the definition name, and records the
kube-apiserver's version (``kubernetes`` in the JSON). tests/crd checks that
pyinformers/k8s.py is what this script writes from the extract.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import ssl
import sys
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

#: group-version documents read from /openapi/v3
GROUP_VERSIONS = (
    "api/v1",
    "apis/apps/v1",
    "apis/batch/v1",
    "apis/coordination.k8s.io/v1",
    "apis/events.k8s.io/v1",
    "apis/apiextensions.k8s.io/v1",
)
#: definitions offered besides the kinds (types a spec or status commonly embeds)
EXTRA = ("io.k8s.apimachinery.pkg.apis.meta.v1.Condition",)


def _get(cp: Any, path: str) -> Any:
    request = urllib.request.Request(cp.url + path, headers={"Authorization": f"Bearer {cp.token}"})
    context = ssl.create_default_context(cafile=str(cp.ca_cert))
    with urllib.request.urlopen(request, timeout=60, context=context) as response:
        return json.loads(response.read())


def _shorten(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            k: (v.rsplit("/", 1)[-1] if k == "$ref" and isinstance(v, str) else _shorten(v))
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_shorten(v) for v in node]
    return node


def _refs(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                found.add(value)
            else:
                found |= _refs(value)
    elif isinstance(node, list):
        for value in node:
            found |= _refs(value)
    return found


def fetch() -> dict[str, Any]:
    from pyinformers import resources
    from pyinformers.testing import ControlPlane

    with ControlPlane() as cp:
        version = _get(cp, "/version")["gitVersion"]
        index = _get(cp, "/openapi/v3")["paths"]
        schemas: dict[str, Any] = {}
        for gv in GROUP_VERSIONS:
            document = _get(cp, index[gv]["serverRelativeURL"])
            schemas.update(_shorten(document["components"]["schemas"]))
    wanted = {(r.group, r.version, r.kind) for r in resources.ALL}
    roots = [
        name
        for name, schema in schemas.items()
        if any(
            (g.get("group", ""), g.get("version"), g.get("kind")) in wanted
            for g in schema.get("x-kubernetes-group-version-kind", ())
        )
        and not name.startswith("io.k8s.apimachinery.pkg.apis.meta.v1.")
    ]
    roots += [name for name in EXTRA if name in schemas]
    keep: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        keep.add(name)
        todo.extend(_refs(schemas[name]) - keep)
    return {
        "kubernetes": version,
        "generated_by": "hack/crd/openapi.py --fetch (kube-apiserver /openapi/v3)",
        "roots": sorted(roots),
        "definitions": {name: schemas[name] for name in sorted(keep)},
    }


def write_extract(document: dict[str, Any]) -> Path:
    path = ROOT / "pyinformers" / "crd" / "_openapi.json.gz"
    raw = json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0, compresslevel=9) as handle:
        handle.write(raw)
    path.write_bytes(buffer.getvalue())
    return path


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--fetch", action="store_true", help="read the OpenAPI documents from a real control plane"
    )
    args = parser.parse_args()
    if args.fetch:
        path = write_extract(fetch())
        print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size} bytes)")
    target = ROOT / "pyinformers" / "k8s.py"
    if (
        not target.exists()
    ):  # bootstrap: pyinformers.crd imports ObjectMeta from the module being made
        target.write_text(
            "from typing_extensions import TypedDict\n\n\nclass ObjectMeta(TypedDict, total=False):\n"
            "    name: str\n"
        )
    from pyinformers.crd._builtins import builtin_types_source

    target.write_text(builtin_types_source())
    print(f"wrote {target.relative_to(ROOT)} ({len(target.read_text().splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
