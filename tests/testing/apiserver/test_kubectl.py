"""kubectl's everyday commands work against ``python -m pyinformers.testing``.

Runs the machine's ``kubectl`` (skipped, saying so, where there is none)
against the command-line server started with a token, so over HTTPS with its
self-signed certificate (kubectl sends tokens only over TLS): create, apply
(client-side, twice), edit (through KUBE_EDITOR), scale, set image, label,
get all, delete -l and get -w, each checked by reading the result back.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from pyinformers.testing import eventually

KUBECTL = shutil.which("kubectl")
pytestmark = pytest.mark.skipif(
    KUBECTL is None, reason="no kubectl on PATH: the kubectl compatibility test needs one"
)

CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  labels: {app: demo}
data: {mode: "fast"}
"""

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: demo}
spec:
  replicas: %d
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: app, image: "nginx:1.25"}
      - {name: sidecar, image: "busybox:1.36"}
"""


@pytest.fixture
def cluster(tmp_path):
    """The command-line server with a token; yields a function running kubectl against it."""
    kubeconfig = tmp_path / "kubeconfig"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pyinformers.testing",
            "--port",
            "0",
            "--token",
            "kubectl-token",
            "--kubeconfig",
            str(kubeconfig),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        banner = [proc.stdout.readline() for _ in range(3)]
        assert any("https://" in line for line in banner), banner
        env = {**os.environ, "KUBECONFIG": str(kubeconfig)}

        def kubectl(*args: str, editor: str | None = None, check: bool = True) -> str:
            run_env = dict(env, KUBE_EDITOR=editor) if editor else env
            done = subprocess.run(
                [KUBECTL, "--cache-dir", str(tmp_path / "cache"), *args],
                capture_output=True, text=True, env=run_env, timeout=60,
            )  # fmt: skip
            if check:
                assert done.returncode == 0, f"kubectl {' '.join(args)}: {done.stderr}"
            return done.stdout

        kubectl.env = env  # type: ignore[attr-defined]
        kubectl.tmp = tmp_path  # type: ignore[attr-defined]
        yield kubectl
    finally:
        proc.terminate()
        proc.wait(timeout=15)
        proc.stdout.close()


def get(kubectl, *args: str) -> dict:
    return json.loads(kubectl("get", *args, "-o", "json"))


def test_everyday_kubectl_commands(cluster):
    kubectl = cluster
    files = kubectl.tmp
    (files / "cm.yaml").write_text(CONFIGMAP)
    assert "configmap/settings created" in kubectl("create", "-f", str(files / "cm.yaml"))

    (files / "deploy.yaml").write_text(DEPLOYMENT % 1)
    assert "deployment.apps/web created" in kubectl("apply", "-f", str(files / "deploy.yaml"))
    (files / "deploy.yaml").write_text(DEPLOYMENT % 2)
    assert "deployment.apps/web configured" in kubectl("apply", "-f", str(files / "deploy.yaml"))
    assert get(kubectl, "deployment", "web")["spec"]["replicas"] == 2

    editor = files / "editor.sh"
    editor.write_text(
        textwrap.dedent("""\
        #!/bin/sh
        sed -i 's/mode: fast/mode: slow/' "$1"
    """)
    )
    editor.chmod(0o755)
    assert "edited" in kubectl("edit", "configmap", "settings", editor=str(editor))
    assert get(kubectl, "configmap", "settings")["data"] == {"mode": "slow"}

    assert "scaled" in kubectl("scale", "deployment", "web", "--replicas=3")
    assert get(kubectl, "deployment", "web")["spec"]["replicas"] == 3

    assert "image updated" in kubectl("set", "image", "deployment/web", "app=nginx:1.27")
    containers = get(kubectl, "deployment", "web")["spec"]["template"]["spec"]["containers"]
    assert [(c["name"], c["image"]) for c in containers] == [
        ("app", "nginx:1.27"),
        ("sidecar", "busybox:1.36"),
    ]

    assert "labeled" in kubectl("label", "configmap", "settings", "tier=backend")
    assert get(kubectl, "configmap", "settings")["metadata"]["labels"] == {
        "app": "demo",
        "tier": "backend",
    }

    assert "web" in kubectl("get", "all")

    watcher = subprocess.Popen(
        [KUBECTL, "--cache-dir", str(files / "cache"), "get", "configmaps", "--watch", "-o", "name"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=kubectl.env,
    )  # fmt: skip
    try:
        assert (
            watcher.stdout.readline().strip() == "configmap/settings"
        )  # the list before the watch
        kubectl("create", "configmap", "late", "--from-literal=a=1")
        assert watcher.stdout.readline().strip() == "configmap/late"  # a watch event
    finally:
        watcher.terminate()
        watcher.wait(timeout=10)
        watcher.stdout.close()
        watcher.stderr.close()

    deleted = kubectl("delete", "configmap,deployment", "-l", "app=demo")
    assert 'configmap "settings" deleted' in deleted and 'deployment.apps "web" deleted' in deleted
    eventually(
        lambda: get(kubectl, "configmaps", "-l", "app=demo")["items"] == [],
        timeout=10,
        what="kubectl to list no demo ConfigMaps",
    )
    assert [i["metadata"]["name"] for i in get(kubectl, "configmaps")["items"]] == ["late"]


def test_kubectl_apply_server_side_merges_conflicts_and_forces(cluster):
    kubectl = cluster
    manifest = kubectl.tmp / "ssa.yaml"
    manifest.write_text(DEPLOYMENT % 2)
    assert "deployment.apps/web serverside-applied" in kubectl(
        "apply", "--server-side", "-f", str(manifest)
    )
    again = get(kubectl, "deployment", "web")
    assert "serverside-applied" in kubectl("apply", "--server-side", "-f", str(manifest))
    same = get(kubectl, "deployment", "web", "--show-managed-fields")
    assert same["metadata"]["resourceVersion"] == again["metadata"]["resourceVersion"]
    assert [(e["manager"], e["operation"]) for e in same["metadata"]["managedFields"]] == [
        ("kubectl", "Apply")
    ]
    assert "scaled" in kubectl("scale", "deployment", "web", "--replicas=5")
    manifest.write_text(DEPLOYMENT % 3)
    refused = kubectl("apply", "--server-side", "-f", str(manifest), check=False)
    assert refused == ""  # nothing applied; kubectl explains the conflict on stderr
    assert get(kubectl, "deployment", "web")["spec"]["replicas"] == 5
    assert "serverside-applied" in kubectl(
        "apply", "--server-side", "--force-conflicts", "-f", str(manifest)
    )
    assert get(kubectl, "deployment", "web")["spec"]["replicas"] == 3
