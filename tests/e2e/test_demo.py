"""``make demo`` runs in the suite: every step converges, and a step that cannot fails clearly."""

from __future__ import annotations

import io

import pytest

from pyinformers.testing import eventually
from samples import demo
from samples.sample_controller import FooController


def test_the_demo_converges_at_every_step_and_lists_its_events():
    out = io.StringIO()
    status = demo.main(
        ["--timeout", "30"], out=out
    )  # a bound per step (each takes milliseconds), for loaded machines
    text = out.getvalue()
    assert status == 0, text
    for step in range(1, 6):
        assert f"[{step}] " in text
    assert text.count("converged in") == 5
    assert "Synced" in text and "sample-controller" in text
    assert "All steps converged" in text


def test_the_demo_exits_non_zero_naming_the_step_that_did_not_converge(monkeypatch):
    monkeypatch.setattr(
        FooController, "reconcile", lambda self, key: None
    )  # a controller that does nothing
    out = io.StringIO()
    status = demo.main(["--timeout", "0.5"], out=out)
    text = out.getvalue()
    assert status == 1
    assert "DEMO FAILED: step 1 (create Foo example-foo" in text
    assert (
        "did not converge within 0.5 s; now: Foo replicas=1 available=None, Deployment absent"
        in text
    )


def test_the_demo_runs_against_a_kubeconfig(tmp_path):
    from pyinformers.testing import ApiServer

    with ApiServer(simulate_workloads=True, workload_delay=0.05) as server:
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        out = io.StringIO()
        status = demo.main(["--kubeconfig", str(kubeconfig), "--namespace", "kube-system"], out=out)
        text = out.getvalue()
        assert status == 0, text
        assert f"against {server.url}" in text
        # Everything it created in that namespace goes away again, except its Events. (A reconcile
        # racing the Foo's deletion may recreate the Deployment from a stale cache; the garbage
        # collector removes such an orphan, as a real cluster's does, asynchronously.)
        assert server.objects("foos", "samplecontroller.k8s.io", namespace="kube-system") == []
        eventually(
            lambda: (
                not server.objects("deployments", "apps", namespace="kube-system")
                and server.gc_idle()
            ),
            what="the orphaned Deployments to be collected",
        )


def test_the_demo_runs_from_a_kubeconfig_with_simulated_workloads(k8s):
    """``python -m samples.demo --kubeconfig F --simulate-workloads``: on a real control plane, no kubelet needed."""
    out = io.StringIO()
    status = demo.main(
        [
            "--kubeconfig",
            k8s.write_kubeconfig(),
            "--namespace",
            k8s.namespace,
            "--simulate-workloads",
            "--timeout",
            "60",
        ],
        out=out,
    )
    text = out.getvalue()
    assert status == 0, text
    assert text.count("converged in") == 5 and "simulating workloads" in text


def test_simulating_workloads_needs_a_kubeconfig(capsys):
    with pytest.raises(SystemExit):
        demo.main(["--simulate-workloads"])
    assert "--simulate-workloads needs --kubeconfig" in capsys.readouterr().err
