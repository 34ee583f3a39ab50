"""CI of the scaffold itself: a project made by ``init``, ``create api`` and ``create webhook`` passes its own tests, installed.

The first test builds pyinformers' wheel, installs it (``--no-deps``) into a
fresh virtualenv that borrows the dependencies already installed next to this
interpreter (a ``.pth`` line: no network), scaffolds a project there with the
installed ``python -m pyinformers``, installs the project, and runs the
project's own tests: on the embedded server, and on the real control plane too
when the envtest binaries exist (``--k8s-server=both``). It takes about a
minute; offline or in a hurry, deselect it with ``-m "not wheel"``.

The second applies the project's ``deploy/`` (with a kind of two versions and
its webhooks: their Service, configurations and CRD conversion) to the real
kube-apiserver in a server-side dry run (apply, strict field validation).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from pyinformers.api import ApiError, ResourceClient
from pyinformers.api._transport import read_json, send
from pyinformers.resources import NAMESPACES
from pyinformers.scaffold import create_api, create_webhook, init_project

ROOT = Path(__file__).resolve().parents[2]


def envtest_binaries() -> bool:
    from pyinformers.testing.envtest import MissingBinaries
    from pyinformers.testing.envtest._assets import find_binaries

    try:
        find_binaries(need=("etcd", "kube-apiserver", "kube-controller-manager"))
    except MissingBinaries:
        return False
    return True


def sh(*argv: str | Path, cwd: Path, timeout: float = 300) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PYINFORMERS"))}
    done = subprocess.run(
        [str(a) for a in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"{argv} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.mark.wheel
@pytest.mark.timeout(900)
def test_a_scaffolded_project_installed_from_the_wheel_passes_its_own_tests(tmp_path: Path) -> None:
    sh(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
       "--wheel-dir", tmp_path / "dist", ROOT, cwd=tmp_path)  # fmt: skip
    wheel = next((tmp_path / "dist").glob("pyinformers-*.whl"))
    venv = tmp_path / "venv"
    sh(sys.executable, "-m", "venv", venv, cwd=tmp_path)
    python = venv / "bin" / "python"
    site = Path(
        sh(
            python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])", cwd=tmp_path
        ).strip()
    )
    # The dependencies this interpreter has (kubernetes, pyyaml, pytest ...), after the venv's own:
    # a path line in a .pth is appended to sys.path, and the .pth files there are not run, so the
    # editable install of the checkout stays out.
    (site / "borrowed-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    sh(python, "-m", "pip", "install", "--quiet", "--no-deps", wheel, cwd=tmp_path)

    started = time.monotonic()
    sh(python, "-m", "pyinformers", "init", "guestbook_operator", "--group", "webapp", cwd=tmp_path)
    project = tmp_path / "guestbook_operator"
    sh(
        python,
        "-m",
        "pyinformers",
        "create",
        "api",
        "--version",
        "v1",
        "--kind",
        "Guestbook",
        cwd=project,
    )
    sh(python, "-m", "pyinformers", "create", "api", "--version", "v1alpha1", "--kind", "Library",
       "--cluster", cwd=project)  # fmt: skip
    # A second version of Guestbook, and its webhooks of every sort (conversion between v1 and v2).
    sh(python, "-m", "pyinformers", "create", "api", "--version", "v2", "--kind", "Guestbook",
       cwd=project)  # fmt: skip
    sh(python, "-m", "pyinformers", "create", "webhook", "--version", "v1", "--kind", "Guestbook",
       "--defaulting", "--validation", "--conversion", cwd=project)  # fmt: skip
    sh(
        python,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-deps",
        ".",
        cwd=project,
    )
    installed = sh(
        python,
        "-c",
        "import pyinformers, guestbook_operator as g; print(pyinformers.__file__, g.__file__)",
        cwd=tmp_path,
    )
    assert str(ROOT) not in installed and str(site) in installed, installed
    assert "usage: guestbook-operator" in sh(
        venv / "bin" / "guestbook-operator", "--help", cwd=tmp_path
    )

    servers = "both" if envtest_binaries() else "embedded"
    out = sh(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--k8s-server={servers}",
             cwd=project, timeout=600)  # fmt: skip
    elapsed = time.monotonic() - started
    summary = out.strip().splitlines()[-1]
    passed = int(re.search(r"(\d+) passed", summary).group(1))  # type: ignore[union-attr]
    assert "failed" not in summary and "error" not in summary, out
    # 3 offline tests (flags, RBAC, manifests), and once per server on the k8s fixture: 4 per kind,
    # 1 for Guestbook's v2 example, 3 for its webhooks (default, refusal, conversion)
    assert passed == 3 + (8 + 1 + 3) * (2 if servers == "both" else 1), out
    print(f"\nscaffold → installed → {summary} on {servers} in {elapsed:.1f} s")
    demo = sh(python, "-m", "guestbook_operator", "--demo", cwd=project, timeout=120)
    assert demo.count("healed:") == 3, demo  # an example per kind and version


#: kind -> (collection, namespaced), for the kinds deploy/ holds.
COLLECTIONS = {
    "Namespace": ("namespaces", False),
    "ServiceAccount": ("serviceaccounts", True),
    "Service": ("services", True),
    "Deployment": ("deployments", True),
    "ClusterRole": ("clusterroles", False),
    "ClusterRoleBinding": ("clusterrolebindings", False),
    "Role": ("roles", True),
    "RoleBinding": ("rolebindings", True),
    "CustomResourceDefinition": ("customresourcedefinitions", False),
    "MutatingWebhookConfiguration": ("mutatingwebhookconfigurations", False),
    "ValidatingWebhookConfiguration": ("validatingwebhookconfigurations", False),
}


def apply_path(doc: dict[str, Any]) -> str:
    collection, namespaced = COLLECTIONS[doc["kind"]]
    version = doc["apiVersion"]
    base = f"/api/{version}" if "/" not in version else f"/apis/{version}"
    where = f"/namespaces/{doc['metadata']['namespace']}" if namespaced else ""
    return f"{base}{where}/{collection}/{doc['metadata']['name']}"


def documents(project: Path) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for path in sorted((project / "deploy").rglob("*.yaml")):
        found.extend(doc for doc in yaml.safe_load_all(path.read_text()) if doc)
    return found


@pytest.mark.k8s_server("real")
def test_the_manifests_pass_a_server_side_apply_dry_run_on_kube_apiserver(
    k8s: Any, tmp_path: Path
) -> None:
    project = init_project(tmp_path / "guestbook_operator", group="webapp")
    create_api(project, version="v1", kind="Guestbook")
    create_api(project, version="v1alpha1", kind="Library", namespaced=False)
    create_api(project, version="v2", kind="Guestbook")
    create_webhook(
        project, version="v1", kind="Guestbook", defaulting=True, validation=True, conversion=True
    )
    api = k8s.api_client()
    docs = documents(project)
    kinds = [doc["kind"] for doc in docs]
    assert {"Namespace", "ServiceAccount", "Deployment", "Service", "ClusterRole",
            "ClusterRoleBinding", "Role", "RoleBinding", "CustomResourceDefinition",
            "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} <= set(kinds)  # fmt: skip
    converted = [
        d for d in docs if d["kind"] == "CustomResourceDefinition" and "conversion" in d["spec"]
    ]
    assert [d["metadata"]["name"] for d in converted] == ["guestbooks.webapp.example.com"]
    namespace = next(doc for doc in docs if doc["kind"] == "Namespace")
    try:  # the one real write: a dry run of namespaced objects needs their namespace to exist
        ResourceClient(api, NAMESPACES).create(namespace)
    except ApiError as error:
        if error.status != 409:
            raise
    for doc in docs:
        response = send(
            api,
            "PATCH",
            apply_path(doc),
            [
                ("dryRun", "All"),
                ("fieldManager", "scaffold-test"),
                ("force", "true"),
                ("fieldValidation", "Strict"),
            ],  # fmt: skip
            headers={"Content-Type": "application/apply-patch+yaml"},
            body=doc,
        )
        warning = response.headers.get("Warning")
        applied = read_json(response)  # raises the server's error, if any
        assert applied["kind"] == doc["kind"], applied
        assert warning is None, (doc["kind"], warning)
