"""Writing a scaffold safely: nothing half-written, nothing the user edited overwritten.

A *plan* maps paths (relative, POSIX) to the text they should hold. The
project file (``PROJECT.json``) records the SHA-256 of every file the
scaffold wrote; a file whose text no longer has that hash was edited by the
user, and :func:`write_plan` refuses to overwrite it (naming it) unless
forced. Everything is first written into a staging folder next to the
target and then moved into place, so a failure (a refused file, a full
disk) leaves the target as it was.

Not thread-safe: one scaffold command at a time per project.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pyinformers.scaffold._names import ScaffoldError

__all__ = ["PROJECT_FILE", "Derive", "digest", "load_project", "new_tree", "write_plan"]

#: ``derive(folder)``: the derived files (``{path: text}``) of the project staged in ``folder``.
Derive = Callable[[Path], Mapping[str, str]]

#: The project's record: its names, its resources, the hashes of the files the scaffold wrote.
PROJECT_FILE = "PROJECT.json"


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def load_project(root: Path) -> dict[str, Any]:
    """The project record of ``root``; a one-line error when ``root`` is not a scaffolded project."""
    path = root / PROJECT_FILE
    if not path.is_file():
        raise ScaffoldError(
            f"{root} is not a pyinformers project (no {PROJECT_FILE}); "
            "run it in a folder made by python -m pyinformers init"
        )
    try:
        project = json.loads(path.read_text())
    except ValueError as error:
        raise ScaffoldError(f"{path} is not valid JSON ({error})") from None
    if not isinstance(project, dict) or "name" not in project:
        raise ScaffoldError(f"{path} is not a pyinformers project record")
    return project


def _dump_project(project: Mapping[str, Any]) -> str:
    return json.dumps(project, indent=2, sort_keys=True) + "\n"


def _stage(folder: Path, plan: Mapping[str, str]) -> None:
    for relative, text in plan.items():
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)


def new_tree(
    target: Path, plan: Mapping[str, str], project: dict[str, Any], *, derive: Derive
) -> None:
    """Create the folder ``target`` holding ``plan``, its derived files and the project record, at once.

    ``target`` must not exist or be an empty folder. The tree is built in a
    sibling staging folder (where ``derive`` reads it) and renamed into place.
    """
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ScaffoldError(f"{target} exists and is not empty; accepted: a new or empty folder")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        _stage(staging, plan)
        derived = dict(derive(staging))
        _stage(staging, derived)
        project["files"] = {
            path: digest(text) for path, text in sorted({**plan, **derived}.items())
        }
        _stage(staging, {PROJECT_FILE: _dump_project(project)})
        if target.exists():
            target.rmdir()
        os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def write_plan(
    root: Path,
    plan: Mapping[str, str],
    project: dict[str, Any],
    *,
    force: bool,
    derive: Derive | None = None,
) -> list[str]:
    """Write ``plan`` (and what ``derive`` derives from the result) into the project at ``root``.

    Returns the paths written (files already holding their text are skipped).
    Refuses, before writing anything, when a file of ``plan`` to overwrite
    was edited since the scaffold wrote it or was never written by it (unless
    ``force``); derived files are always rewritten. ``derive`` reads a copy
    of the package with ``plan`` applied, staged next to the project.
    """
    staging = Path(tempfile.mkdtemp(prefix=".scaffold-", dir=root))
    try:
        derived: Mapping[str, str] = {}
        if derive is not None:
            package = root / project["name"]
            if package.is_dir():
                shutil.copytree(package, staging / "preview" / project["name"])
            _stage(
                staging / "preview",
                {p: t for p, t in plan.items() if p.startswith(project["name"] + "/")},
            )
            derived = derive(staging / "preview")
        recorded: dict[str, str] = dict(project.get("files") or {})
        changes: dict[str, str] = {}
        edited: list[str] = []
        for relative, text in [*plan.items(), *derived.items()]:
            path = root / relative
            if path.is_file():
                current = path.read_text()
                if current == text:
                    recorded[relative] = digest(text)
                    continue
                checked = relative in plan and not force
                if checked and recorded.get(relative) != digest(current):
                    edited.append(relative)
            changes[relative] = text
        if edited:
            raise ScaffoldError(
                f"refusing to overwrite {', '.join(sorted(edited))} "
                "(edited since the scaffold wrote it, or not the scaffold's); --force overwrites"
            )
        for relative, text in changes.items():
            recorded[relative] = digest(text)
        project["files"] = dict(sorted(recorded.items()))
        _stage(staging / "out", {**changes, PROJECT_FILE: _dump_project(project)})
        for relative in [*changes, PROJECT_FILE]:
            target = root / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / "out" / relative, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return sorted(changes)
