"""The package's layers cannot tangle: imports only go downwards and never in a cycle.

Layers, lowest first (DESIGN.md): ``_exports`` (how faces publish names),
``_locking`` (taking contended locks under the GIL, below everything),
``clock``, ``_metrics`` (Prometheus plumbing), ``_gc_policy`` and ``_allocator``
(handing free memory back to the OS); ``api``
(with ``resources``); ``cache`` and ``workqueue``, which never import each
other; ``leaderelection``, ``record`` and ``controller``; ``manager`` (the
process runtime and the operator's entry point); ``testing`` on top;
``rbac`` and ``__main__`` (``python -m pyinformers``) beside them. Nothing in the library
imports ``testing``. The check reads the source with :mod:`ast`, so it sees
imports inside functions too (those count for layering), while imports under
``if TYPE_CHECKING:`` are ignored for the cycle check only.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pyinformers

ROOT = Path(pyinformers.__file__).parent

#: layer -> the layers it may import (besides itself)
ALLOWED: dict[str, set[str]] = {
    "_exports": set(),
    "_locking": set(),
    "clock": {"_locking"},
    "_metrics": {"_locking"},
    "_gc_policy": {"_locking"},
    "_allocator": set(),
    "api": {"_exports", "_locking", "clock"},
    # Typed views of the built-in kinds, generated: plain TypedDicts, imports nothing.
    "k8s": set(),
    "resources": {"_exports", "_locking", "clock", "api", "k8s"},
    "cache": {
        "_exports",
        "_locking",
        "clock",
        "_metrics",
        "_gc_policy",
        "_allocator",
        "api",
        "resources",
    },
    "workqueue": {"_exports", "_locking", "clock", "_metrics", "_gc_policy"},
    "leaderelection": {
        "_exports",
        "_locking",
        "clock",
        "_metrics",
        "_gc_policy",
        "api",
        "resources",
    },
    "record": {"_exports", "_locking", "clock", "_metrics", "_gc_policy", "api", "resources"},
    "controller": {
        "_exports",
        "_locking",
        "clock",
        "_metrics",
        "_gc_policy",
        "api",
        "resources",
        "cache",
        "workqueue",
        "leaderelection",
    },
    # Typed custom resources: Python types to CRDs and back.
    "crd": {"_exports", "api", "k8s"},
    # RBAC rendering of the operator's declarations.
    "rbac": {"_locking", "api"},
    # Admission and conversion handlers, their reviews and configurations (served by manager).
    "webhook": {"_exports", "_locking", "clock", "api", "resources"},
    # The process runtime: Manager, Operator (flags), probes, leader election and sharding admission.
    "manager": {
        "_exports",
        "_locking",
        "clock",
        "_metrics",
        "_gc_policy",
        "_allocator",
        "api",
        "resources",
        "cache",
        "workqueue",
        "leaderelection",
        "record",
        "controller",
        "rbac",
        "webhook",
    },
    "testing": {
        "_exports",
        "_locking",
        "clock",
        "_metrics",
        "_gc_policy",
        "api",
        "resources",
        "cache",
        "workqueue",
        "controller",
        "record",
        "leaderelection",
        "manager",
        "webhook",
    },
    # The project generator: it renders the operator's RBAC (manager) and CRDs (crd).
    "scaffold": {"_exports", "_locking", "api", "crd", "manager", "rbac", "webhook"},
    # Deprecated alias of pyinformers.manager's entry point (one release).
    "cli": {"_exports", "manager"},
    "__main__": {"_locking", "api", "manager", "rbac", "crd", "webhook", "scaffold"},
    "__init__": {
        "_exports",
        "_locking",
        "clock",
        "_metrics",
        "_gc_policy",
        "api",
        "resources",
        "cache",
        "workqueue",
        "controller",
        "manager",
        "record",
        "leaderelection",
    },
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _resolve(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _is_type_checking_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imports(path: Path) -> tuple[set[str], set[str]]:
    """(every pyinformers module imported anywhere, those imported at run time at module level)."""
    module = _module_name(path)
    tree = ast.parse(path.read_text(), filename=str(path))
    everywhere: set[str] = set()
    module_level: set[str] = set()

    def names(node: ast.AST) -> set[str]:
        if isinstance(node, ast.Import):
            return {alias.name for alias in node.names}
        if isinstance(node, ast.ImportFrom):
            target = _resolve(module, path.name == "__init__.py", node)
            named = {f"{target}.{alias.name}" for alias in node.names}
            if target == "pyinformers":
                # "from pyinformers import gc_policy" imports a module, not the package's
                # exports; "from pyinformers import Controller" shows up as layer "Controller".
                return named
            # "from pyinformers.cache import store" may name a submodule: count both.
            return {target} | named
        return set()

    for node in ast.walk(tree):
        everywhere |= {n for n in names(node) if n.split(".")[0] == "pyinformers"}

    def visit(body: list[ast.stmt]) -> None:
        for stmt in body:
            if _is_type_checking_block(stmt):
                continue
            module_level.update(n for n in names(stmt) if n.split(".")[0] == "pyinformers")
            if isinstance(stmt, (ast.If, ast.Try)):
                for block in (
                    getattr(stmt, "body", []),
                    getattr(stmt, "orelse", []),
                    getattr(stmt, "finalbody", []),
                ):
                    visit(block)
                for handler in getattr(stmt, "handlers", []):
                    visit(handler.body)

    visit(tree.body)
    return everywhere, module_level


def _sources() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def test_every_import_goes_down_the_layers():
    sources = _sources()
    violations = []
    for module, path in sources.items():
        layer = _layer(module)
        allowed = ALLOWED.get(layer)
        assert allowed is not None, f"{module}: layer {layer!r} is not declared in ALLOWED"
        for imported in _imports(path)[0]:
            if imported == "pyinformers":
                if layer != "__init__":
                    violations.append(f"{module} imports the top-level package")
                continue
            target = _layer(imported)
            if target != layer and target not in allowed:
                violations.append(f"{module} ({layer}) imports {imported} ({target})")
    assert not violations, "layer violations:\n" + "\n".join(sorted(violations))


def test_there_are_no_import_cycles_at_module_level():
    sources = _sources()
    graph: dict[str, set[str]] = {}
    for module, path in sources.items():
        graph[module] = {m for m in _imports(path)[1] if m in sources and m != module}
    # A package's __init__ importing its own submodules is the normal re-export pattern;
    # a submodule importing its own package __init__ back is the cycle we forbid.
    state: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def dfs(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt) :] + [nxt])
            elif nxt not in state:
                dfs(nxt)
        stack.pop()
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            dfs(module)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_public_surface_is_exported_once_and_importable():
    exported = pyinformers.__all__
    assert len(exported) == len(set(exported)), "a name is listed twice in __all__"
    for name in exported:
        assert hasattr(pyinformers, name), f"pyinformers.__all__ lists {name!r} but it is missing"


def test_importing_the_package_and_its_clock_does_not_load_the_kubernetes_client():
    import subprocess
    import sys

    code = (
        "import sys, pyinformers; pyinformers.FakeClock; "
        "assert 'kubernetes' not in sys.modules, 'kubernetes was imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
