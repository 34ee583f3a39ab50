"""ControlPlane: finding binaries, supervising processes, and (with binaries) the real thing.

The first tests use stand-in executables (shell scripts) so the supervision
logic is tested on every run, binaries or not; the ``k8s_server("real")``
tests need ``make envtest`` and run with ``--k8s-server=real|both``.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pyinformers.api import ResourceClient
from pyinformers.api._errors import Forbidden
from pyinformers.resources import CONFIGMAPS, SECRETS
from pyinformers.testing import eventually
from pyinformers.testing.envtest._assets import find_binaries
from pyinformers.testing.envtest._controlplane import ComponentExited, ControlPlane, MissingBinaries
from pyinformers.testing.envtest._processes import Component

REPOSITORY = Path(__file__).resolve().parents[3]


def _script(directory: Path, name: str, body: str) -> Path:
    path = directory / name
    path.write_text("#!/bin/sh\n" + textwrap.dedent(body))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is not running; Component.stop reaps, so this is only a guard
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split()[2] != "Z"


def test_missing_binaries_is_one_line_naming_where_it_looked_and_how_to_get_them(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("KUBEBUILDER_ASSETS", str(tmp_path / "assets"))
    monkeypatch.setenv("PYINFORMERS_ENVTEST_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    with pytest.raises(MissingBinaries) as caught:
        ControlPlane().start()
    message = str(caught.value)
    assert "\n" not in message
    assert str(tmp_path / "assets") in message and "make envtest" in message


def test_an_explicit_directory_is_the_only_place_looked_at(tmp_path, monkeypatch):
    good = tmp_path / "good"
    good.mkdir()
    for name in ("etcd", "kube-apiserver"):
        _script(good, name, "exit 0\n")
    monkeypatch.setenv("KUBEBUILDER_ASSETS", str(good))
    assert find_binaries().directory == good
    assert find_binaries().kube_controller_manager is None  # setup-envtest assets have none
    with pytest.raises(MissingBinaries, match="empty"):
        find_binaries(tmp_path / "empty")


def test_the_newest_version_in_the_envtest_cache_wins(tmp_path, monkeypatch):
    monkeypatch.delenv("KUBEBUILDER_ASSETS", raising=False)
    monkeypatch.setenv("PYINFORMERS_ENVTEST_HOME", str(tmp_path))
    for version in ("1.9.0", "1.36.3", "1.36.10"):
        d = tmp_path / "k8s" / f"{version}-linux-amd64"
        d.mkdir(parents=True)
        for name in ("etcd", "kube-apiserver"):
            _script(d, name, "exit 0\n")
    if not sys.platform.startswith("linux") or os.uname().machine != "x86_64":
        pytest.skip("the fixture directories are named for linux-amd64")
    assert find_binaries().directory.name == "1.36.10-linux-amd64"


def test_a_component_that_exits_during_start_up_surfaces_with_its_log_tail(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _script(bin_dir, "etcd", 'echo "etcd: cannot listen: address already in use" >&2\nexit 3\n')
    _script(bin_dir, "kube-apiserver", "exec sleep 600\n")
    state = tmp_path / "state"
    state.mkdir()
    with pytest.raises(ComponentExited) as caught:
        ControlPlane(binary_dir=bin_dir, state_dir=state, start_timeout=30).start()
    assert caught.value.name == "etcd" and caught.value.returncode == 3
    assert "address already in use" in str(caught.value)
    assert list(state.iterdir()) == []  # the throwaway state is gone


def test_a_start_up_timeout_stops_exactly_the_processes_started(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    pid_file = tmp_path / "etcd.pid"
    _script(bin_dir, "etcd", f"echo $$ > {pid_file}\nexec sleep 600\n")  # never healthy
    _script(bin_dir, "kube-apiserver", "exit 1\n")
    bystander = subprocess.Popen(["sleep", "600"])  # same command line, not ours: must survive
    try:
        cp = ControlPlane(
            binary_dir=bin_dir, state_dir=tmp_path, start_timeout=6.0
        )  # room for a loaded machine to run the script
        with pytest.raises(TimeoutError, match="etcd /health"):
            cp.start()
        pid = int(pid_file.read_text())
        assert not _alive(pid)
        assert bystander.poll() is None
        assert cp.components == {}
    finally:
        bystander.kill()
        bystander.wait()


def test_a_component_ends_with_sigterm_and_reports_its_status(tmp_path):
    log = tmp_path / "c.log"
    component = Component(
        "sleeper",
        ["sh", "-c", "trap 'echo bye; exit 7' TERM; echo hello; while :; do sleep 0.05; done"],
        log,
    )
    component.start()
    eventually(
        lambda: "hello" in component.log_tail(), timeout=10, what="the component's first line"
    )
    component.check()
    assert component.stop(timeout=10) == 7
    assert "bye" in component.log_tail()
    with pytest.raises(ComponentExited, match="sleeper exited with status 7"):
        component.check()


def test_the_cli_says_in_one_line_that_binaries_are_missing(tmp_path):
    env = {
        **os.environ,
        "KUBEBUILDER_ASSETS": str(tmp_path),
        "PYINFORMERS_ENVTEST_HOME": str(tmp_path),
        "XDG_DATA_HOME": str(tmp_path),
    }
    done = subprocess.run(
        [sys.executable, "-m", "pyinformers.testing.envtest"],
        cwd=REPOSITORY,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "make envtest" in done.stderr


# -- the real control plane ------------------------------------------------------------------


@pytest.mark.k8s_server("real")
def test_the_real_control_plane_is_ready_and_serves_openapi(k8s):
    cp = k8s.control_plane
    assert cp._get(cp.url + "/readyz") == b"ok"
    assert cp._get(cp.url + "/openapi/v2")
    assert cp._get(cp.url + "/openapi/v3")
    assert cp.has_controller_manager or cp.binaries.kube_controller_manager is None
    assert sum(cp.rss_bytes().values()) > 0


@pytest.mark.k8s_server("real")
def test_a_service_account_client_holds_only_the_rules_granted(k8s):
    sa = k8s.client_for_service_account(
        "reader",
        rules=[
            {
                "apiGroups": [""],
                "resources": ["configmaps"],
                "verbs": ["get", "list", "watch", "create"],
            },
        ],
    )
    configmaps = ResourceClient(sa, CONFIGMAPS)
    configmaps.create({"metadata": {"name": "allowed", "namespace": k8s.namespace}})
    assert [
        c["metadata"]["name"]
        for c in configmaps.list(k8s.namespace).items
        if c["metadata"]["name"] == "allowed"
    ]
    with pytest.raises(Forbidden):
        ResourceClient(sa, SECRETS).list(k8s.namespace)
    with pytest.raises(Forbidden):
        configmaps.list("default")  # the Role is namespaced
    with pytest.raises(Forbidden):
        configmaps.delete("allowed", k8s.namespace)  # no delete verb
