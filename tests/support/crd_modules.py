"""Helpers for the CRD tests: load generated source as a module, normalise CRDs for comparison."""

from __future__ import annotations

import copy
import importlib.util
import itertools
import sys
import tempfile
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any

_counter = itertools.count()


_DIR = Path(tempfile.mkdtemp(prefix="pyinformers-crd-types-"))


def load_module(source: str, name: str = "") -> types.ModuleType:
    """Import generated ``source`` from a file, as a fresh module in ``sys.modules``.

    From a file so that :func:`inspect.getsource` finds the field docstrings,
    and compiled without this module's ``from __future__`` flags.
    """
    name = name or f"_generated_crd_types_{next(_counter)}"
    path = _DIR / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def normalized(crd: Mapping[str, Any]) -> dict[str, Any]:
    """A CRD as the Python form can say it: root apiVersion/kind/metadata properties dropped,
    ``required`` lists sorted, int-or-string written with its anyOf, defaults filled in."""
    out = copy.deepcopy(dict(crd))
    metadata = out.get("metadata") or {}
    approved = (metadata.get("annotations") or {}).get("api-approved.kubernetes.io")
    out["metadata"] = {"name": metadata.get("name")}
    if approved:
        out["metadata"]["annotations"] = {"api-approved.kubernetes.io": approved}
    spec = out["spec"]
    names = spec["names"]
    names.setdefault("listKind", names["kind"] + "List")
    names.setdefault("singular", names["kind"].lower())
    spec.setdefault("scope", "Namespaced")
    for version in spec["versions"]:
        version.setdefault("served", True)
        version.setdefault("storage", False)
        if not version.get("subresources"):
            version.pop("subresources", None)
        root = version["schema"]["openAPIV3Schema"]
        for field in ("apiVersion", "kind", "metadata"):
            (root.get("properties") or {}).pop(field, None)
        if root.get("properties") == {}:
            root.pop("properties")
        _walk(root)
    return out


def _walk(node: Any) -> None:
    if isinstance(node, dict):
        if isinstance(node.get("required"), list):
            node["required"] = sorted(node["required"])
            if not node["required"]:
                node.pop("required")
        if node.get("x-kubernetes-int-or-string") and "anyOf" not in node:
            node["anyOf"] = [{"type": "integer"}, {"type": "string"}]
        for value in node.values():
            _walk(value)
    elif isinstance(node, list):
        for value in node:
            _walk(value)
