"""``python -m pyinformers init | create api | create webhook | manifests``: the scaffold's command line.

Each command works on the current folder (``init`` creates ``NAME`` in it),
prints the files it wrote, and ends with one line on stderr (exit status 2 for
bad input) when it refuses: :class:`~pyinformers.scaffold.ScaffoldError`
never shows a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from pyinformers.scaffold._names import ScaffoldError
from pyinformers.scaffold._project import (
    LICENSES,
    create_api,
    create_webhook,
    init_project,
    manifest_drift,
    version_note,
    write_manifests,
)

__all__ = ["create_command", "init_command", "manifests_command"]


def _scope(parser: argparse.ArgumentParser, default: bool | None) -> None:
    scope = parser.add_mutually_exclusive_group()
    scope.add_argument("--namespaced", dest="namespaced", action="store_true", default=default)
    scope.add_argument(
        "--cluster",
        dest="namespaced",
        action="store_false",
        help="cluster-scoped resources (default: namespaced"
        + ("" if default is not None else ", or what init chose")
        + ")",
    )


def _run(command: str, action: Callable[[], object]) -> int:
    try:
        result = action()
    except ScaffoldError as error:
        print(f"pyinformers {command}: {error}", file=sys.stderr)
        return 2
    if isinstance(result, list):
        for path in result:
            print(f"wrote {path}")
    return 0


def init_command(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pyinformers init",
        description="Write a new operator project into the folder NAME (a Python package name).",
    )
    parser.add_argument("name", metavar="NAME")
    parser.add_argument("--group", required=True, help="the API group's first label (e.g. webapp)")
    parser.add_argument(
        "--domain", default="example.com", help="the rest of the API group (default: example.com)"
    )
    parser.add_argument("--license", choices=LICENSES, default="apache2")
    _scope(parser, True)
    args = parser.parse_args(argv)

    def init() -> list[str]:
        root = init_project(
            Path.cwd() / args.name,
            group=args.group,
            domain=args.domain,
            license=args.license,
            namespaced=args.namespaced,
        )
        print(f"created {root}: cd {args.name} && pip install -e '.[test]' && make test")
        return []

    return _run("init", init)


def create_command(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pyinformers create",
        description="Add to the project in the current folder.",
    )
    sub = parser.add_subparsers(dest="what", required=True)
    api = sub.add_parser(
        "api",
        help="a resource: its types, CRD, controller, example and tests; for a kind the project "
        "has, another version of it (in the same CRD)",
    )
    api.add_argument("--version", required=True, help="e.g. v1, v1alpha1")
    api.add_argument("--kind", required=True, help="UpperCamelCase, e.g. Guestbook")
    _scope(api, None)
    api.add_argument(
        "--controller",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="with a controller (a new kind only)",
    )
    api.add_argument(
        "--storage",
        action="store_true",
        help="another version of a kind: make it the storage version (default: the first stays)",
    )
    api.add_argument("--force", action="store_true", help="overwrite files edited since generated")
    hook = sub.add_parser(
        "webhook",
        help="a kind's webhooks (defaulting, validation, conversion), served by the operator, "
        "with their tests and deploy/ configurations",
    )
    hook.add_argument(
        "--version",
        required=True,
        help="the version the admission webhooks take, and the hub of --conversion",
    )
    hook.add_argument("--kind", required=True, help="a kind create api made, e.g. Guestbook")
    hook.add_argument(
        "--defaulting",
        action="store_true",
        help="a mutating webhook: spec.message defaults when left out",
    )
    hook.add_argument(
        "--validation",
        action="store_true",
        help="a validating webhook: a blank spec.message is refused",
    )
    hook.add_argument(
        "--conversion",
        action="store_true",
        help="a conversion webhook between the kind's versions, --version the hub (two versions needed)",
    )
    hook.add_argument(
        "--force", action="store_true", help="write a kind's webhooks again, over edited files"
    )
    args = parser.parse_args(argv)
    options = {key: value for key, value in vars(args).items() if key != "what"}  # the flags' dests
    if args.what == "webhook":
        return _run("create webhook", lambda: create_webhook(Path.cwd(), **options))

    def add() -> list[str]:
        for path in create_api(Path.cwd(), **options):
            print(f"wrote {path}")
        note = version_note(Path.cwd(), args.kind)
        if note is not None:
            print(f"note: {note}")
        return []

    return _run("create api", add)


def manifests_command(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pyinformers manifests",
        description="Regenerate deploy/'s CRDs, RBAC and Deployment from the project's code.",
    )
    parser.add_argument(
        "--check", action="store_true", help="only list what drifted (exit 1 if any)"
    )
    args = parser.parse_args(argv)
    if not args.check:
        return _run("manifests", lambda: write_manifests(Path.cwd()))
    drift: list[str] = []

    def check() -> None:
        drift.extend(manifest_drift(Path.cwd()))

    status = _run("manifests", check)
    for path in drift:
        print(f"drifted {path}")
    return status or (1 if drift else 0)
