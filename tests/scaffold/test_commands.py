"""The scaffold's commands: what they write, what they refuse (one line, nothing written), what they protect."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
import yaml

import pyinformers
from pyinformers.__main__ import main
from pyinformers.scaffold import (
    ScaffoldError,
    create_api,
    init_project,
    manifest_drift,
    write_manifests,
)

#: Instructions a Containerfile may hold (the Containerfile/Dockerfile reference).
INSTRUCTIONS = {
    "FROM", "RUN", "CMD", "LABEL", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT", "VOLUME",
    "USER", "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL",
}  # fmt: skip


def tree(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = init_project(tmp_path / "guestbook_operator", group="webapp")
    create_api(root, version="v1", kind="Guestbook")
    return root


def run(cwd: Path, command: str, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.chdir(cwd)
    return main(shlex.split(command))


def test_init_writes_an_installable_project_pinned_to_this_release(tmp_path: Path) -> None:
    root = init_project(tmp_path / "shop_operator", group="shop", domain="acme.io", license="none")
    files = tree(root)
    for path in [
        "pyproject.toml", "README.md", "Makefile", ".gitignore", "Containerfile", "PROJECT.json",
        "shop_operator/operator.py", "shop_operator/__main__.py", "tests/test_manifests.py",
        "deploy/00-namespace.yaml", "deploy/05-serviceaccount.yaml", "deploy/10-rbac.yaml",
        "deploy/20-deployment.yaml", "deploy/30-metrics.yaml",
    ]:  # fmt: skip
        assert path in files, path
    assert "LICENSE" not in files
    assert f'"pyinformers=={pyinformers.__version__}"' in files["pyproject.toml"]
    assert 'shop-operator = "shop_operator.operator:main"' in files["pyproject.toml"]
    assert "from pyinformers.manager import Manager, Operator" in files["shop_operator/operator.py"]
    for target in ("run:", "test:", "test-real:", "manifests:", "lint:"):
        assert f"\n{target}\n" in files["Makefile"]
    project = json.loads(files["PROJECT.json"])
    assert project["group"] == "shop.acme.io" and project["namespaced"] is True
    assert set(project["files"]) == set(files) - {"PROJECT.json"}
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging left behind


def test_the_deployment_has_probes_a_restricted_context_and_a_grace_period(project: Path) -> None:
    deployment = yaml.safe_load((project / "deploy/20-deployment.yaml").read_text())
    pod = deployment["spec"]["template"]["spec"]
    container = pod["containers"][0]
    assert pod["terminationGracePeriodSeconds"] == 40
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert "--leader-elect" in container["args"]
    documents = list(yaml.safe_load_all((project / "deploy/30-metrics.yaml").read_text()))
    assert [d["kind"] for d in documents] == ["Service", "ClusterRole"]
    assert documents[1]["metadata"]["name"] == "guestbook-operator-metrics-reader"


def test_the_containerfile_parses_and_follows_the_python_image_conventions(project: Path) -> None:
    """No container tool on these machines: the Containerfile is linted, never built here."""
    text = (project / "Containerfile").read_text()
    lines = [line for line in text.replace("\\\n", " ").splitlines() if line.strip()]
    instructions = [line.split()[0] for line in lines if not line.lstrip().startswith("#")]
    assert set(instructions) <= INSTRUCTIONS, set(instructions) - INSTRUCTIONS
    assert [i for i in instructions if i not in ("ARG",)][0] == "FROM"  # ARG may precede FROM
    froms = [line for line in lines if line.startswith("FROM")]
    assert all("python:" in line and "-slim" in line for line in froms)
    user = [line for line in lines if line.startswith("USER")][-1].split()[1]
    assert (
        user.split(":")[0].isdigit() and user != "0"
    )  # numeric, non-root: runAsNonRoot can check it
    entrypoint = [line for line in lines if line.startswith("ENTRYPOINT")][-1]
    assert json.loads(entrypoint.split(None, 1)[1]) == ["guestbook-operator"]  # exec form
    assert "PYTHONDONTWRITEBYTECODE=1" in text and "PYTHONUNBUFFERED=1" in text


def test_create_api_adds_types_crd_controller_example_and_tests(project: Path) -> None:
    files = tree(project)
    for path in [
        "guestbook_operator/api/v1/guestbook.py", "guestbook_operator/controllers/guestbook.py",
        "examples/v1_guestbook.yaml", "tests/test_guestbook.py", "tests/test_guestbook_example.py",
        "deploy/crds/guestbooks.webapp.example.com.yaml",
    ]:  # fmt: skip
        assert path in files, path
    crd = yaml.safe_load(files["deploy/crds/guestbooks.webapp.example.com.yaml"])
    assert crd["spec"]["scope"] == "Namespaced" and crd["spec"]["names"]["kind"] == "Guestbook"
    assert "status" in crd["spec"]["versions"][0]["subresources"]
    rbac = files["deploy/10-rbac.yaml"]
    assert "guestbooks/status" in rbac and "configmaps" in rbac
    assert "set_status_condition" in files["guestbook_operator/controllers/guestbook.py"]
    assert "create_or_update" in files["guestbook_operator/controllers/guestbook.py"]


def test_a_cluster_scoped_api_without_a_controller_has_no_controller(project: Path) -> None:
    written = create_api(
        project, version="v1alpha1", kind="Library", namespaced=False, controller=False
    )
    assert "guestbook_operator/controllers/library.py" not in written
    assert "tests/test_library_example.py" in written
    crd = yaml.safe_load((project / "deploy/crds/libraries.webapp.example.com.yaml").read_text())
    assert crd["spec"]["scope"] == "Cluster"


def test_deploy_drifts_when_the_args_change_and_make_manifests_repairs_it(project: Path) -> None:
    assert manifest_drift(project) == []
    operator = project / "guestbook_operator/operator.py"
    operator.write_text(operator.read_text().replace('    "--leader-elect",\n', ""))
    assert manifest_drift(project) == ["deploy/10-rbac.yaml", "deploy/20-deployment.yaml"]
    assert write_manifests(project) == ["deploy/10-rbac.yaml", "deploy/20-deployment.yaml"]
    assert manifest_drift(project) == []
    deployment = yaml.safe_load((project / "deploy/20-deployment.yaml").read_text())
    assert deployment["spec"]["replicas"] == 1  # one replica without leader election
    assert "leases" not in (project / "deploy/10-rbac.yaml").read_text()


def test_a_stale_crd_is_drift(project: Path) -> None:
    (project / "deploy/crds/olds.webapp.example.com.yaml").write_text(
        "kind: CustomResourceDefinition\n"
    )
    assert manifest_drift(project) == ["deploy/crds/olds.webapp.example.com.yaml"]


def test_create_refuses_to_overwrite_an_edited_file_naming_it_unless_forced(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The same kind again is refused first; force cannot add it twice either.
    assert run(project, "create api --version v1 --kind Guestbook --force", monkeypatch) == 2
    assert "the kind Guestbook already exists" in capsys.readouterr().err
    # A file the user edited that a new kind would overwrite: the v1 package's __init__ is kept.
    example = project / "examples/v1_order.yaml"
    example.write_text("# mine\n")
    before = tree(project)
    assert run(project, "create api --version v1 --kind Order", monkeypatch) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "examples/v1_order.yaml" in err and "--force" in err
    assert tree(project) == before  # nothing written
    assert run(project, "create api --version v1 --kind Order --force", monkeypatch) == 0
    assert "kind: Order" in example.read_text()


BAD = [
    ("init 1guestbook --group webapp", "invalid project name '1guestbook'"),
    ("init Guest-Book --group webapp", "invalid project name 'Guest-Book'"),
    ("init json --group webapp", "shadows the module 'json'"),
    ("init guestbook --group Web_App", "invalid group 'Web_App'"),
    ("init guestbook --group webapp --domain localhost", "invalid domain 'localhost'"),
    ("init guestbook --group apps --domain k8s.io", "reserved for Kubernetes"),
]


@pytest.mark.parametrize("command, message", BAD)
def test_bad_init_input_is_one_line_and_writes_nothing(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
    message: str,
) -> None:
    assert run(tmp_path, command, monkeypatch) == 2
    err = capsys.readouterr().err
    assert err.startswith("pyinformers init: ") and message in err and "accepted" in err
    assert err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


BAD_API = [
    ("create api --version 1 --kind Guestbook", "invalid version '1'"),
    ("create api --version v1beta --kind Guestbook", "invalid version 'v1beta'"),
    ("create api --version v1 --kind guestbook", "invalid kind 'guestbook'"),
    ("create api --version v1 --kind Guest_Book", "invalid kind 'Guest_Book'"),
    ("create api --version v2 --kind Guestbook", "the kind Guestbook already exists"),
]


@pytest.mark.parametrize("command, message", BAD_API)
def test_bad_api_input_is_one_line_and_writes_nothing(
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
    message: str,
) -> None:
    before = tree(project)
    assert run(project, command, monkeypatch) == 2
    err = capsys.readouterr().err
    assert err.startswith("pyinformers create api: ") and message in err and "accepted" in err
    assert err.count("\n") == 1
    assert tree(project) == before


def test_create_api_outside_a_project_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(tmp_path, "create api --version v1 --kind Guestbook", monkeypatch) == 2
    err = capsys.readouterr().err
    assert "is not a pyinformers project (no PROJECT.json)" in err and err.count("\n") == 1


def test_init_refuses_a_folder_that_is_not_empty(tmp_path: Path) -> None:
    (tmp_path / "guestbook").mkdir()
    (tmp_path / "guestbook" / "notes.txt").write_text("mine")
    with pytest.raises(ScaffoldError, match="exists and is not empty"):
        init_project(tmp_path / "guestbook", group="webapp")
    assert [p.name for p in (tmp_path / "guestbook").iterdir()] == ["notes.txt"]


def test_manifests_check_lists_the_drift(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "deploy/10-rbac.yaml").write_text("# edited\n")
    assert run(project, "manifests --check", monkeypatch) == 1
    assert capsys.readouterr().out == "drifted deploy/10-rbac.yaml\n"
    assert run(project, "manifests", monkeypatch) == 0
    assert run(project, "manifests --check", monkeypatch) == 0


def test_the_generated_code_passes_its_own_make_lint(project: Path) -> None:
    """What ``make lint`` runs in the project (ruff, configured by its pyproject.toml), on two kinds."""
    import subprocess
    import sys

    create_api(project, version="v1alpha1", kind="Library", namespaced=False)
    for command in (["format", "--check", "."], ["check", "."]):
        done = subprocess.run(
            [sys.executable, "-m", "ruff", *command], cwd=project, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stdout + done.stderr
