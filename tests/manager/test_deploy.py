"""The Manager as a Deployment runs it: shutdown within the kubelet's grace period, RBAC refusals, secured metrics."""

from __future__ import annotations

import http.client
import json
import logging
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from kubernetes import client as k8s_client

from pyinformers.api._config import ConfigurationError
from pyinformers.controller import Controller
from pyinformers.controller._controller import DEFAULT_SHUTDOWN_TIMEOUT
from pyinformers.manager import LeaderElectionConfig, Manager
from pyinformers.manager._probes import ANY_PORT
from pyinformers.resources import CONFIGMAPS

REPOSITORY = Path(__file__).resolve().parents[2]
KUBELET_DEFAULT_GRACE = 30  # terminationGracePeriodSeconds when a Pod does not say
from pyinformers.manager._operator import (  # noqa: E402
    RECORDER_FLUSH_TIMEOUT as RECORDER_FLUSH,  # the event recorder's flush after the manager stopped
)


def _offline_client():
    return k8s_client.ApiClient(k8s_client.Configuration(host="http://127.0.0.1:9"))


def test_the_default_stop_fits_the_kubelets_default_grace_period_with_room_to_exit():
    manager = Manager(api_client=_offline_client(), check_server=False)
    assert manager.shutdown_timeout == DEFAULT_SHUTDOWN_TIMEOUT == Controller("c").shutdown_timeout
    # Everything stop() may wait for, plus the recorder's flush, leaves seconds before SIGKILL.
    assert manager.stop_budget + RECORDER_FLUSH <= KUBELET_DEFAULT_GRACE - 2, manager.stop_budget


@pytest.mark.parametrize("sample", ["sample_controller", "mydeployment"])
def test_the_manifests_grace_period_outlasts_the_operators_stop(sample):
    documents = list(
        yaml.safe_load_all(
            (REPOSITORY / "samples" / sample / "deploy" / "20-deployment.yaml").read_text()
        )
    )
    deployment = next(d for d in documents if d["kind"] == "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    args = pod["containers"][0]["args"]
    timeout = next(
        (float(a.split("=", 1)[1]) for a in args if a.startswith("--shutdown-timeout=")),
        DEFAULT_SHUTDOWN_TIMEOUT,
    )
    manager = Manager(
        api_client=_offline_client(),
        check_server=False,
        shutdown_timeout=timeout,
        metrics_port=8443,
        health_port=8081,
        leader_election=LeaderElectionConfig(name="x", namespace="y")
        if "--leader-elect" in args
        else None,
    )
    assert pod["terminationGracePeriodSeconds"] > manager.stop_budget + RECORDER_FLUSH


class _Stuck(Controller):
    def __init__(self, factory, release):
        super().__init__("stuck", metrics_registry=False)
        self.release, self.entered = release, threading.Event()
        self.watch(factory.informer(CONFIGMAPS))

    def reconcile(self, key):
        self.entered.set()
        self.release.wait(30)


def test_stop_with_a_stuck_reconcile_returns_within_its_budget(api_server):
    client = api_server.api_client()
    release = threading.Event()
    manager = Manager(
        api_client=client,
        metrics_port=ANY_PORT,
        health_port=ANY_PORT,
        bind_address="127.0.0.1",
        shutdown_timeout=0.5,
        tune_gc=False,
    )
    controller = manager.add(_Stuck(manager.factory, release))
    try:
        manager.start()
        manager.factory.client(CONFIGMAPS).create(
            {"metadata": {"name": "x", "namespace": "default"}}
        )
        assert controller.entered.wait(10)
        started = time.monotonic()
        assert manager.stop() is False  # the reconcile was abandoned, and stop() says so
        assert time.monotonic() - started <= manager.stop_budget
    finally:
        release.set()
        manager.stop()


# -- a server that refuses everything, the way RBAC does ---------------------------------------------------
class _Refusing(BaseHTTPRequestHandler):
    refuse = ("list", "watch")

    def do_GET(self):  # noqa: N802
        resource = self.path.split("?")[0].rstrip("/").split("/")[-1]
        verb = "watch" if "watch=" in self.path else "list"
        if verb not in self.refuse:
            body = json.dumps(
                {
                    "kind": "ConfigMapList",
                    "apiVersion": "v1",
                    "metadata": {"resourceVersion": "7"},
                    "items": [],
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        message = (
            f'{resource} is forbidden: User "system:serviceaccount:ops:op" cannot {verb} resource '
            f'"{resource}" in API group "" at the cluster scope'
        )
        body = json.dumps(
            {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "message": message,
                "reason": "Forbidden",
                "code": 403,
            }
        ).encode()
        self.send_response(403)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def refusing_manager():
    """A Manager with one ConfigMap informer, on a server whose RBAC refuses what ``refuse(...)`` says."""
    made = []

    def make(*verbs):
        handler = type("Handler", (_Refusing,), {"refuse": verbs})
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        client = k8s_client.ApiClient(
            k8s_client.Configuration(host=f"http://127.0.0.1:{server.server_address[1]}")
        )
        manager = Manager(
            api_client=client,
            check_server=False,
            metrics_port=0,
            health_port=0,
            sync_timeout=60,
            tune_gc=False,
        )
        manager.factory.informer(CONFIGMAPS)
        made.append((manager, server, client))
        return manager

    yield make
    for manager, server, client in made:
        manager.stop()
        server.shutdown()
        server.server_close()
        client.close()


def test_a_missing_list_permission_fails_start_at_once_naming_the_verb_and_resource(
    refusing_manager,
):
    manager = refusing_manager("list", "watch")
    started = time.monotonic()
    with pytest.raises(ConfigurationError, match=r'cannot list resource "configmaps".*RBAC'):
        manager.start()
    assert time.monotonic() - started < 10, "it waited for the sync timeout instead of failing fast"


def test_a_missing_watch_permission_ends_run_with_the_refusal_and_fails_healthz(refusing_manager):
    manager = refusing_manager(
        "watch"
    )  # the list succeeds and the cache syncs; the watch is refused after
    started = time.monotonic()
    with pytest.raises(SystemExit, match=r'cannot watch resource "configmaps".*RBAC'):
        manager.run()
    assert time.monotonic() - started < 10, "it kept retrying the refused watch"
    assert ("permissions", False) in [(name, ok) for name, ok, _ in manager.health_checks()]


# -- secured metrics, plain probes -----------------------------------------------------------------------------
def _status(address, path, headers=None):
    connection = http.client.HTTPConnection(*address, timeout=5)
    try:
        connection.request("GET", path, headers=headers or {})
        response = connection.getresponse()
        response.read()
        return response.status
    finally:
        connection.close()


def test_a_guarded_metrics_server_leaves_the_probes_open(api_server):
    seen = []

    def guard(method, path, headers):
        seen.append(path)
        return None if headers.get("Authorization") == "Bearer ok" else (401, "text/plain", b"no\n")

    manager = Manager(
        api_client=api_server.api_client(),
        metrics_port=ANY_PORT,
        health_port=ANY_PORT,
        bind_address="127.0.0.1",
        metrics_auth=guard,
        tune_gc=False,
    )
    try:
        manager.start()
        assert _status(manager.metrics_address, "/metrics") == 401
        assert _status(manager.metrics_address, "/metrics", {"Authorization": "Bearer ok"}) == 200
        assert _status(manager.health_address, "/healthz") == 200
        assert _status(manager.health_address, "/readyz") == 200
        assert seen == ["/metrics", "/metrics"]
    finally:
        manager.stop()


def test_a_secured_metrics_port_cannot_be_shared_with_the_probes():
    with pytest.raises(ValueError, match="cannot share port 8080"):
        Manager(
            api_client=_offline_client(),
            check_server=False,
            metrics_port=8080,
            health_port=8080,
            metrics_auth=lambda *a: None,
        )


def test_a_refused_write_in_reconcile_is_logged_as_a_missing_permission_without_a_traceback(caplog):
    from pyinformers.api._errors import Forbidden

    class Writer(Controller):
        watches_optional = True

        def reconcile(self, key):
            raise Forbidden(
                'deployments.apps "x" is forbidden: User "system:serviceaccount:ops:op" cannot update '
                'resource "deployments" in API group "apps" in the namespace "default"',
                code=403,
            )

    controller = Writer("writer", metrics_registry=False)
    controller.queue.add("default/x")
    key, _ = controller.queue.get()
    with caplog.at_level(logging.ERROR, logger="pyinformers.controller.writer"):
        assert controller.process(key) == "error"
    (record,) = caplog.records
    assert (
        "permission missing" in record.getMessage()
        and 'cannot update resource "deployments"' in record.getMessage()
    )
    assert record.exc_info is None
    assert controller.queue.num_requeues("default/x") == 1
    controller.stop()
