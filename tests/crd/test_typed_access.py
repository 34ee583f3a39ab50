"""A typo through a typed lister, client or handler is a type error (mypy, and pyright when installed)."""

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

SNIPPET = """
from typing import Any

from pyinformers.api import Resource, ResourceClient
from pyinformers.cache import SharedInformerFactory
from pyinformers.resources import DEPLOYMENTS, PODS
from tests.crd.cronjob_types import CRONJOB_CRD, CronJob

CRONJOBS: Resource[CronJob] = CRONJOB_CRD.resource()
UNTYPED = Resource("example.com", "v1", "widgets", "Widget")


def reconcile(factory: SharedInformerFactory, client: ResourceClient[CronJob]) -> None:
    cj = factory.lister(CRONJOBS).namespace("default").get("nightly")
    if cj is not None:
        schedule: str = cj["spec"]["schedule"]
        cj["spec"]["schedulee"]
    created = client.create(cj or {})
    created["spec"]["suspend"] = "yes"
    for pod in factory.lister(PODS).list(namespace="default"):
        pod["spec"]["containerz"]
    deployment = factory.informer(DEPLOYMENTS).lister.get("web", namespace="default")
    if deployment is not None:
        replicas: str = deployment["spec"]["replicas"]
    meta_only = factory.lister(PODS, metadata_only=True).get("p", namespace="default")
    if meta_only is not None:
        meta_only["spec"]
    widget = factory.lister(UNTYPED).get("w", namespace="default")
    reveal_type(widget)
    if widget is not None:
        widget["anything"]["goes"]
"""


def _run(command: list[str], tmp_path: Path) -> str:
    env = dict(os.environ, MYPYPATH=str(ROOT), PYTHONPATH=str(ROOT))
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    return done.stdout + done.stderr


def _mypy(arguments: list[str], tmp_path: Path) -> str:
    """mypy's output on ``arguments`` with the project's flags, imports from this worktree."""
    cache = ["--cache-dir", str(tmp_path / "cache"), "--follow-imports=silent"]
    config = ["--no-error-summary", "--config-file", str(ROOT / "setup.cfg")]
    return _run([sys.executable, "-m", "mypy", *config, *cache, *arguments], tmp_path)


@pytest.fixture
def snippet(tmp_path: Path) -> Path:
    path = tmp_path / "snippet.py"
    path.write_text(textwrap.dedent(SNIPPET))
    return path


def test_mypy_reports_a_typo_through_a_typed_lister_and_knows_the_types(
    snippet: Path, tmp_path: Path
) -> None:
    out = _mypy([str(snippet)], tmp_path)
    lines = [line.split(": ", 1)[1] for line in out.splitlines() if line.startswith(str(snippet))]
    errors = [line for line in lines if line.startswith("error")]
    assert any('TypedDict "CronJobSpec" has no key "schedulee"' in e for e in errors), out
    assert any('TypedDict "PodSpec" has no key "containerz"' in e for e in errors), out
    assert any('has type "int", variable has type "str"' in e for e in errors), out  # replicas
    assert any('"suspend" has incompatible type "str"' in e for e in errors), (
        out
    )  # client returns CronJob
    assert any('"PartialObjectMetadata" has no key "spec"' in e for e in errors), out
    assert len(errors) == 5, out
    assert 'Revealed type is "dict[str, Any] | None"' in out, out  # untyped: the old meaning


@pytest.mark.skipif(
    shutil.which("pyright", path=os.path.dirname(sys.executable)) is None
    and shutil.which("pyright") is None,
    reason="pyright is not installed",
)
def test_pyright_reports_the_same_typos(snippet: Path, tmp_path: Path) -> None:
    pyright = shutil.which("pyright", path=os.path.dirname(sys.executable)) or "pyright"
    out = _run([pyright, "--pythonpath", sys.executable, str(snippet)], tmp_path)
    assert '"schedulee" is not a defined key in "CronJobSpec"' in out, out
    assert '"containerz" is not a defined key in "PodSpec"' in out, out


def _controller_gen_style_cronjob() -> dict:
    """The CronJob CRD as controller-gen writes it: root apiVersion, kind and ``metadata: {type: object}``."""
    from tests.crd.cronjob_types import CRONJOB_CRD

    definition = CRONJOB_CRD.definition()
    root = definition["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    root["properties"] = {
        "apiVersion": {
            "description": "APIVersion defines the versioned schema of this representation.",
            "type": "string",
        },
        "kind": {
            "description": "Kind is a string value representing the REST resource.",
            "type": "string",
        },
        "metadata": {"type": "object"},
        **root["properties"],
    }
    return definition


def test_modules_generated_from_real_crds_type_check(tmp_path: Path) -> None:
    import yaml

    from pyinformers.crd._codegen import types_module

    crds = {
        "certificates": next(
            yaml.safe_load_all((ROOT / "tests/crd/data/certificates.yaml").read_text())
        ),
        "cronjobs": _controller_gen_style_cronjob(),
        "foos": yaml.safe_load((ROOT / "samples/sample_controller/artifacts/crd.yaml").read_text()),
        "mydeployments": yaml.safe_load(
            (ROOT / "samples/mydeployment/artifacts/crd.yaml").read_text()
        ),
    }
    paths = []
    for name, definition in crds.items():
        path = tmp_path / f"generated_{name}.py"
        path.write_text(types_module(definition))
        paths.append(str(path))
    use = tmp_path / "use_generated.py"
    use.write_text(
        textwrap.dedent("""
        from pyinformers.cache import SharedInformerFactory
        from generated_cronjobs import CRONJOBS
        from generated_certificates import CERTIFICATES

        def f(factory: SharedInformerFactory) -> None:
            cj = factory.lister(CRONJOBS).namespace("default").get("nightly")
            if cj is not None:
                containers = cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
                image: str = containers[0]["image"]
                containers[0]["imagee"]
            for cert in factory.lister(CERTIFICATES).list():
                cert["spec"]["issuerRef"]["name"]
                cert["spec"]["privateKey"]["algorithm"] == "DSA"
    """)
    )
    out = _mypy(["--strict-equality", *paths, str(use)], tmp_path)
    errors = [line for line in out.splitlines() if ": error:" in line]
    assert [e for e in errors if not e.startswith(str(use))] == [], out
    assert len(errors) == 2 and "imagee" in errors[0] and "DSA" in errors[1], out
