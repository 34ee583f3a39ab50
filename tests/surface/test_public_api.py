"""The public surface is pinned: its names and their signatures change only on purpose.

``tests/surface/public_api.txt`` lists every name of every public namespace and the
signature of every public callable (classes with their public methods). When
a change to the surface is deliberate, regenerate the file and commit it with
the change::

    .venv/bin/python tests/surface/test_public_api.py --update

Public namespaces: the package, each subpackage's ``__init__``, and the
modules in :data:`PUBLIC_MODULES`; everything else is internal (docs/api.rst).
"""

from __future__ import annotations

import ast
import enum
import importlib
import inspect
import pkgutil
import re
import sys
from pathlib import Path

import pyinformers

SNAPSHOT = Path(__file__).with_name("public_api.txt")
#: Public modules that are not package ``__init__`` files.
PUBLIC_MODULES = [
    "pyinformers.api.meta",
    "pyinformers.clock",
    "pyinformers.rbac",
    "pyinformers.resources",
]


def public_namespaces() -> list[str]:
    packages = [
        m.name
        for m in pkgutil.walk_packages(
            pyinformers.__path__, "pyinformers.", onerror=lambda name: None
        )
        if m.ispkg and not any(part.startswith("_") for part in m.name.split("."))
    ]
    # The package last, so each signature is listed under the subpackage that is its home.
    return sorted(packages + PUBLIC_MODULES) + ["pyinformers"]


def _signature(obj: object) -> str:
    try:
        text = str(inspect.signature(obj))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return "(...)"
    return re.sub(r" at 0x[0-9a-f]+", "", text)  # default values' reprs carry addresses


def _describe_class(path: str, cls: type) -> list[str]:
    if issubclass(cls, enum.Enum):
        return [f"enum {path}: " + ", ".join(member.name for member in cls)]
    lines = [f"class {path}{_signature(cls)}"]
    for name, member in sorted(vars(cls).items()):
        if name.startswith("_"):
            continue
        if isinstance(member, property):
            lines.append(f"  {name}: property")
        elif isinstance(member, (staticmethod, classmethod)):
            lines.append(f"  {name}{_signature(getattr(cls, name))} [{type(member).__name__}]")
        elif inspect.isfunction(member):
            lines.append(f"  {name}{_signature(member)}")
    return lines


def surface() -> list[str]:
    lines: list[str] = []
    described: set[int] = set()
    for namespace in public_namespaces():
        module = importlib.import_module(namespace)
        names = sorted(getattr(module, "__all__", []))
        lines.extend(f"{namespace}: {name}" for name in names)  # one a line: fewer merge conflicts
        for name in names:
            obj = getattr(module, name)
            path = f"{namespace}.{name}"
            if inspect.isclass(obj):
                if id(obj) in described:
                    continue
                described.add(id(obj))
                lines.extend(_describe_class(path, obj))
            elif inspect.isfunction(obj):
                if id(obj) in described:
                    continue
                described.add(id(obj))
                lines.append(f"def {path}{_signature(obj)}")
    return lines


def test_the_public_surface_matches_the_snapshot():
    expected = SNAPSHOT.read_text().splitlines()
    actual = surface()
    if actual != expected:
        import difflib

        diff = "\n".join(
            difflib.unified_diff(expected, actual, "public_api.txt", "now", lineterm="", n=0)
        )
        raise AssertionError(
            "the public surface changed; if that is deliberate run "
            "`.venv/bin/python tests/surface/test_public_api.py --update` and commit tests/surface/public_api.txt\n"
            + diff
        )


def _type_checking_names(path: Path) -> dict[str, str]:
    """name -> module of the ``from M import N as N`` lines under ``if TYPE_CHECKING:``."""
    found: dict[str, str] = {}
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for stmt in node.body:
                assert isinstance(stmt, ast.ImportFrom), ast.unparse(stmt)
                for alias in stmt.names:
                    assert alias.asname == alias.name, f"re-export {alias.name} as itself"
                    found[alias.name] = stmt.module or ""
    return found


def test_type_checkers_see_every_lazily_exported_name_with_its_real_type():
    import pyinformers.cache

    for package in (pyinformers, pyinformers.cache):
        lazy: dict[str, str] = package._EXPORTS
        seen = _type_checking_names(Path(package.__file__))
        assert set(seen) == set(lazy), package.__name__
        for name, home in seen.items():
            # The lazy table names the face (or module) a name comes from; the
            # TYPE_CHECKING import names the module below it that defines it.
            assert home == lazy[name] or home.startswith(lazy[name] + "."), (name, home, lazy[name])


def test_every_public_name_is_importable_and_listed_once():
    for namespace in public_namespaces():
        module = importlib.import_module(namespace)
        exported = list(getattr(module, "__all__", []))
        assert len(exported) == len(set(exported)), f"{namespace}.__all__ lists a name twice"
        for name in exported:
            assert hasattr(module, name), f"{namespace}.__all__ lists {name!r} but it is missing"


def test_no_two_public_names_mean_different_things():
    """One name, one meaning: ``EventHandler`` may not be a cache protocol here and a controller class there."""
    meaning: dict[str, tuple[object, str]] = {}
    clashes = []
    for namespace in public_namespaces():
        module = importlib.import_module(namespace)
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            seen = meaning.setdefault(name, (obj, namespace))
            if seen[0] is not obj:
                clashes.append(f"{name}: {seen[1]} and {namespace}")
    assert not clashes, "clashing public names:\n" + "\n".join(clashes)


if __name__ == "__main__":
    if sys.argv[1:] == ["--update"]:
        SNAPSHOT.write_text("\n".join(surface()) + "\n")
        print(f"wrote {SNAPSHOT}")
    else:
        print("\n".join(surface()))
