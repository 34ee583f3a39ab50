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
    create_webhook,
    init_project,
    manifest_drift,
    version_note,
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
    assert "the kind Guestbook already has the version v1" in capsys.readouterr().err
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
    ("create api --version v1 --kind Guestbook", "the kind Guestbook already has the version v1"),
    ("create api --version v2 --kind Guestbook --cluster", "the kind Guestbook is namespaced"),
    ("create api --version v1 --kind V2", "named like a version"),
]


BAD_WEBHOOK = [
    ("create webhook --version v1 --kind Guestbook", "nothing to create"),
    ("create webhook --version v1 --kind Order --defaulting", "the project has no kind Order"),
    ("create webhook --version v2 --kind Guestbook --validation", "has no version v2"),
    ("create webhook --version v1 --kind Guestbook --conversion", "has one version (v1)"),
    ("create webhook --version 1 --kind Guestbook --defaulting", "invalid version '1'"),
]


@pytest.mark.parametrize("command, message", BAD_API + BAD_WEBHOOK)
def test_bad_create_input_is_one_line_and_writes_nothing(
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
    message: str,
) -> None:
    before = tree(project)
    assert run(project, command, monkeypatch) == 2
    err = capsys.readouterr().err
    prefix = "pyinformers " + " ".join(command.split()[:2]) + ": "  # create api, create webhook
    assert err.startswith(prefix) and message in err and "accepted" in err
    assert err.count("\n") == 1
    assert tree(project) == before


@pytest.mark.parametrize(
    "command",
    [
        "create api --version v1 --kind Guestbook",
        "create webhook --version v1 --kind A --defaulting",
    ],
)
def test_create_outside_a_project_says_so_and_writes_nothing(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
) -> None:
    assert run(tmp_path, command, monkeypatch) == 2
    err = capsys.readouterr().err
    assert "is not a pyinformers project (no PROJECT.json)" in err and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


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
    """What ``make lint`` runs in the project (ruff, configured by its pyproject.toml): two kinds of two
    versions each, of either scope, with webhooks of every sort."""
    import subprocess
    import sys

    create_api(project, version="v1alpha1", kind="Library", namespaced=False)
    create_api(project, version="v1beta1", kind="Library", storage=True)
    create_api(project, version="v2", kind="Guestbook")
    create_webhook(project, version="v1", kind="Guestbook", defaulting=True, validation=True)
    create_webhook(project, version="v1beta1", kind="Library", validation=True, conversion=True)
    for command in (["format", "--check", "."], ["check", "."]):
        done = subprocess.run(
            [sys.executable, "-m", "ruff", *command], cwd=project, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stdout + done.stderr


# -- a second version of a kind -------------------------------------------------------------------


def crd_versions(
    project: Path, crd: str = "guestbooks.webapp.example.com"
) -> list[tuple[str, bool]]:
    definition = yaml.safe_load((project / f"deploy/crds/{crd}.yaml").read_text())
    return [(v["name"], v["storage"]) for v in definition["spec"]["versions"]]


def test_a_second_version_joins_the_crd_and_the_first_stays_stored(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    types_v1 = (project / "guestbook_operator/api/v1/guestbook.py").read_text()
    assert run(project, "create api --version v2 --kind Guestbook", monkeypatch) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[:-1] == [
        f"wrote {path}"
        for path in [
            "deploy/crds/guestbooks.webapp.example.com.yaml", "examples/v2_guestbook.yaml",
            "guestbook_operator/api/guestbook.py", "guestbook_operator/api/v2/__init__.py",
            "guestbook_operator/api/v2/guestbook.py", "tests/test_guestbook_v2_example.py",
        ]
    ]  # fmt: skip
    note = out.splitlines()[-1]
    assert note.startswith("note: Guestbook now has the versions v1 (stored), v2;")
    assert "create webhook --version v1 --kind Guestbook --conversion" in note
    assert crd_versions(project) == [("v1", True), ("v2", False)]
    assert (project / "guestbook_operator/api/v1/guestbook.py").read_text() == types_v1  # untouched
    assert "name: guestbook-sample-v2" in (project / "examples/v2_guestbook.yaml").read_text()
    record = json.loads((project / "PROJECT.json").read_text())["resources"][0]
    assert record["versions"] == ["v1", "v2"] and record["storage"] == "v1"
    assert manifest_drift(project) == []


def test_a_new_version_made_the_storage_version_takes_it_from_the_first(project: Path) -> None:
    create_api(project, version="v1beta1", kind="Guestbook", storage=True)
    assert crd_versions(project) == [("v1", False), ("v1beta1", True)]
    kind_module = (project / "guestbook_operator/api/guestbook.py").read_text()
    assert 'STORAGE = "v1beta1"' in kind_module
    create_api(project, version="v2", kind="Guestbook")  # the storage version stays where it is
    assert crd_versions(project) == [("v1", False), ("v1beta1", True), ("v2", False)]
    note = version_note(project, "Guestbook")
    assert note is not None and "v1 (stored)" not in note and "v1beta1 (stored)" in note
    assert version_note(project, "Nope") is None


def test_a_second_version_refuses_to_rewrite_an_edited_kind_module(project: Path) -> None:
    kind_module = project / "guestbook_operator/api/guestbook.py"
    kind_module.write_text(
        kind_module.read_text().replace('STORAGE = "v1"', 'STORAGE = "v1"  # mine')
    )
    before = tree(project)
    with pytest.raises(
        ScaffoldError, match="refusing to overwrite guestbook_operator/api/guestbook.py"
    ):
        create_api(project, version="v2", kind="Guestbook")
    assert tree(project) == before
    create_api(project, version="v2", kind="Guestbook", force=True)
    assert crd_versions(project) == [("v1", True), ("v2", False)]


# -- create webhook ---------------------------------------------------------------------------------


def test_create_webhook_writes_the_handlers_their_tests_and_their_deploy(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert manifest_drift(project) == [] and not (project / "deploy/40-webhooks.yaml").exists()
    create_api(project, version="v2", kind="Guestbook")
    command = "create webhook --version v1 --kind Guestbook --defaulting --validation --conversion"
    assert run(project, command, monkeypatch) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"wrote {path}"
        for path in [
            "deploy/20-deployment.yaml", "deploy/40-webhooks.yaml",
            "deploy/crds/guestbooks.webapp.example.com.yaml",
            "guestbook_operator/webhooks/guestbook.py", "tests/test_guestbook_webhooks.py",
        ]
    ]  # fmt: skip
    module = (project / "guestbook_operator/webhooks/guestbook.py").read_text()
    for name in (
        "def default_guestbook(",
        "def validate_guestbook(",
        "def v2_to_v1(",
        "def v1_to_v2(",
    ):
        assert name in module, name
    test = (project / "tests/test_guestbook_webhooks.py").read_text()
    assert test.count("\ndef test_") == 3 and "k8s.install_webhooks(WEBHOOKS)" in test
    service, mutating, validating = yaml.safe_load_all(
        (project / "deploy/40-webhooks.yaml").read_text()
    )
    assert (
        service["kind"] == "Service"
        and service["metadata"]["name"] == "guestbook-operator-webhooks"
    )
    assert service["spec"]["ports"][0]["targetPort"] == "webhook"
    assert mutating["kind"] == "MutatingWebhookConfiguration"
    assert validating["kind"] == "ValidatingWebhookConfiguration"
    for config in (mutating, validating):
        (entry,) = config["webhooks"]
        assert entry["clientConfig"]["service"]["name"] == "guestbook-operator-webhooks"
        assert entry["rules"][0]["apiVersions"] == ["v1"]
    crd = yaml.safe_load((project / "deploy/crds/guestbooks.webapp.example.com.yaml").read_text())
    assert crd["spec"]["conversion"]["strategy"] == "Webhook"
    assert crd["spec"]["conversion"]["webhook"]["clientConfig"]["service"]["path"] == "/convert"
    pod = yaml.safe_load((project / "deploy/20-deployment.yaml").read_text())["spec"]["template"]
    container = pod["spec"]["containers"][0]
    assert {"name": "webhook", "containerPort": 9443, "protocol": "TCP"} in container["ports"]
    assert {"name": "webhook-tls", "mountPath": "/tmp/k8s-webhook-server/serving-certs",
            "readOnly": True} in container["volumeMounts"]  # fmt: skip
    assert {
        "name": "webhook-tls",
        "secret": {"secretName": "guestbook-operator-webhook-tls"},
    } in pod["spec"]["volumes"]
    assert manifest_drift(project) == []


def test_the_registry_is_none_without_webhooks_and_served_with_them(project: Path) -> None:
    """operator.py passes webhooks/'s WEBHOOKS to the Operator; None (no server, no certificate) until one exists."""
    import importlib

    from pyinformers.scaffold._project import _imported_from

    def registry() -> object:
        with _imported_from(project, "guestbook_operator"):
            return importlib.import_module("guestbook_operator.operator").OPERATOR.webhooks

    assert registry() is None
    create_webhook(project, version="v1", kind="Guestbook", validation=True)
    webhooks = registry()
    assert [w.name for w in webhooks.admission] == ["validate-guestbooks.webapp.example.com"]  # type: ignore[attr-defined]


def test_create_webhook_twice_is_refused_and_force_writes_it_again(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        run(project, "create webhook --version v1 --kind Guestbook --defaulting", monkeypatch) == 0
    )
    module = project / "guestbook_operator/webhooks/guestbook.py"
    module.write_text(module.read_text() + "# mine\n")
    before = tree(project)
    assert (
        run(project, "create webhook --version v1 --kind Guestbook --validation", monkeypatch) == 2
    )
    err = capsys.readouterr().err
    assert (
        err.count("\n") == 1
        and "the kind Guestbook has webhooks already" in err
        and "--force" in err
    )
    assert tree(project) == before
    command = "create webhook --version v1 --kind Guestbook --validation --force"
    assert run(project, command, monkeypatch) == 0
    assert "def validate_guestbook(" in module.read_text() and "# mine" not in module.read_text()
    mutating = [d for d in yaml.safe_load_all((project / "deploy/40-webhooks.yaml").read_text())]
    assert [d["kind"] for d in mutating] == ["Service", "ValidatingWebhookConfiguration"]
    assert manifest_drift(project) == []


def test_webhooks_removed_from_the_code_are_drift_and_make_manifests_removes_them(
    project: Path,
) -> None:
    create_webhook(project, version="v1", kind="Guestbook", defaulting=True)
    (project / "guestbook_operator/webhooks/guestbook.py").unlink()
    assert manifest_drift(project) == ["deploy/20-deployment.yaml", "deploy/40-webhooks.yaml"]
    assert write_manifests(project) == ["deploy/20-deployment.yaml", "deploy/40-webhooks.yaml"]
    assert not (project / "deploy/40-webhooks.yaml").exists() and manifest_drift(project) == []


def test_a_project_whose_operator_predates_webhooks_gets_it_wired_or_named(project: Path) -> None:
    """A project from before webhooks: no webhooks/ package, an operator.py without WEBHOOKS."""
    operator = project / "guestbook_operator/operator.py"
    (project / "guestbook_operator/webhooks/__init__.py").unlink()
    operator.write_text(operator.read_text().replace("    webhooks=WEBHOOKS,\n", ""))
    operator.write_text(
        operator.read_text().replace("from guestbook_operator.webhooks import WEBHOOKS\n", "")
    )
    with pytest.raises(ScaffoldError, match="refusing to overwrite guestbook_operator/operator.py"):
        create_webhook(project, version="v1", kind="Guestbook", defaulting=True)
    written = create_webhook(project, version="v1", kind="Guestbook", defaulting=True, force=True)
    assert {"guestbook_operator/operator.py", "guestbook_operator/webhooks/__init__.py"} <= set(
        written
    )
    assert "webhooks=WEBHOOKS" in operator.read_text() and manifest_drift(project) == []
