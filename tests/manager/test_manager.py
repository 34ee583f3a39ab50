"""The Manager: endpoints, readiness during sync, configuration errors, signals in a subprocess."""

from __future__ import annotations

import os  # noqa: E402
import queue  # noqa: E402
import re
import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import textwrap  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import urllib.error  # noqa: E402
import urllib.request  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
from prometheus_client import CollectorRegistry  # noqa: E402

from pyinformers.cache import SharedInformerFactory  # noqa: E402
from pyinformers.controller import Controller  # noqa: E402
from pyinformers.manager import ANY_PORT, ConfigurationError, Manager
from pyinformers.resources import CONFIGMAPS  # noqa: E402
from pyinformers.testing import eventually  # noqa: E402

WAIT = 15.0
REPO = Path(__file__).resolve().parents[2]


class Echo(Controller):
    def __init__(self, factory, registry, name="echo"):
        super().__init__(name, metrics_registry=registry)
        self.seen = []
        self.cond = threading.Condition()
        self.watch(factory.informer(CONFIGMAPS))

    def reconcile(self, key):
        with self.cond:
            self.seen.append(key)
            self.cond.notify_all()

    def wait_for(self, key):
        deadline = time.monotonic() + WAIT
        with self.cond:
            while key not in self.seen:
                remaining = deadline - time.monotonic()
                assert remaining > 0, f"{key} never reconciled"
                self.cond.wait(remaining)


def get(address, path):
    """(status, body) of an HTTP GET on the manager's server."""
    try:
        with urllib.request.urlopen(
            f"http://{address[0]}:{address[1]}{path}", timeout=WAIT
        ) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def make_manager(api_server, **options):
    registry = CollectorRegistry()
    options.setdefault("metrics_port", ANY_PORT)
    options.setdefault("health_port", ANY_PORT)
    manager = Manager(
        api_client=api_server.api_client(),
        bind_address="127.0.0.1",
        metrics_registry=registry,
        **options,
    )
    return manager, registry


def test_the_endpoints_answer_metrics_health_and_readiness(api_server):
    manager, registry = make_manager(api_server)
    echo = manager.add(Echo(manager.factory, registry))
    manager.factory.client(CONFIGMAPS).create(
        {"metadata": {"name": "hello", "namespace": "default"}}
    )
    manager.start()
    try:
        echo.wait_for("default/hello")
        status, body = get(manager.metrics_address, "/metrics")
        assert status == 200
        assert 'controller_runtime_reconcile_total{controller="echo",result="success"}' in body
        assert 'controller_runtime_max_concurrent_reconciles{controller="echo"} 1.0' in body
        assert 'workqueue_adds_total{name="echo"}' in body
        assert get(manager.health_address, "/healthz") == (200, "ok\n")
        assert get(manager.health_address, "/readyz") == (200, "ok\n")
        status, body = get(manager.health_address, "/readyz?verbose")
        assert (
            status == 200
            and "[+]informer v1/configmaps ok (" in body
            and "[+]controller echo ok" in body
        )
        # the cache's memory estimate, on the probe and as a metric
        assert re.search(
            r"\[\+\]informer v1/configmaps ok \([\d,]+ objects, about [\d.,]+ (B|KB|MB)\)", body
        )
        assert (
            'pyinformers_informer_cache_bytes{informer="v1/configmaps"}'
            in get(manager.metrics_address, "/metrics")[1]
        )
        assert get(manager.health_address, "/nope")[0] == 404
        assert get(manager.metrics_address, "/healthz")[0] == 404  # separate servers
        assert manager.metrics_address != manager.health_address
    finally:
        assert manager.stop(5)
    with pytest.raises(OSError):
        get(manager.health_address, "/healthz")


def test_metrics_and_probes_can_share_one_port(api_server):
    import socket

    with socket.socket() as s:  # find a free port for an explicit-port configuration
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    manager, registry = make_manager(api_server, metrics_port=port, health_port=port)
    manager.start()
    try:
        assert manager.metrics_address == manager.health_address == ("127.0.0.1", port)
        assert get(manager.metrics_address, "/metrics")[0] == 200
        assert get(manager.metrics_address, "/healthz")[0] == 200
    finally:
        manager.stop(5)


def test_port_zero_turns_the_endpoints_off(api_server):
    manager, _ = make_manager(api_server, metrics_port=0, health_port=0)
    manager.start()
    try:
        assert manager.metrics_address is None and manager.health_address is None
    finally:
        manager.stop(5)


def test_readyz_fails_until_the_caches_sync_and_stop_interrupts_the_wait(api_server):
    api_server.faults.error_rate = 1.0  # every list fails: the cache cannot sync
    manager, registry = make_manager(api_server, sync_timeout=WAIT)
    manager.add(Echo(manager.factory, registry))
    errors = []

    def start():
        try:
            manager.start()
        except Exception as err:  # pragma: no cover - reported below
            errors.append(err)

    starter = threading.Thread(target=start, name="test-manager-start")
    starter.start()
    try:
        eventually(
            lambda: manager.health_address is not None, timeout=WAIT, what="the probe server"
        )
        status, body = get(manager.health_address, "/readyz")
        assert status == 503
        assert "[-]informer v1/configmaps failed: cache not synced" in body
        assert "[-]controller echo failed: not running" in body
        assert get(manager.health_address, "/healthz")[0] in (
            200,
            503,
        )  # reflector may already look unhealthy
        api_server.faults.reset()
        starter.join(WAIT)
        assert not starter.is_alive() and not errors
        assert get(manager.health_address, "/readyz") == (200, "ok\n")
    finally:
        api_server.faults.reset()
        manager.stop(5)
        starter.join(WAIT)


def test_stop_during_the_cache_wait_returns_promptly(api_server):
    api_server.faults.error_rate = 1.0
    manager, registry = make_manager(api_server, sync_timeout=60)
    manager.add(Echo(manager.factory, registry))
    starter = threading.Thread(target=manager.start, name="test-manager-start")
    starter.start()
    eventually(
        lambda: any(i.is_running() for i in manager.factory.informers().values()),
        timeout=WAIT,
        what="an informer to run",
    )
    t0 = time.monotonic()
    manager.stop(5)
    starter.join(WAIT)
    assert not starter.is_alive() and time.monotonic() - t0 < 5


def test_a_sync_timeout_names_the_informer(api_server):
    api_server.faults.error_rate = 1.0
    manager, registry = make_manager(api_server, sync_timeout=0.3)
    manager.add(Echo(manager.factory, registry))
    from pyinformers.controller import CacheSyncTimeout

    with pytest.raises(CacheSyncTimeout, match="v1/configmaps"):
        manager.start()
    assert manager.metrics_address is not None  # was started, and is stopped again:
    with pytest.raises(OSError):
        get(manager.metrics_address, "/metrics")


def test_reflector_options_reach_every_informer_and_the_users_error_callback_runs_after_the_managers(
    api_server,
):
    errors = []
    manager, registry = make_manager(
        api_server,
        metrics_port=0,
        health_port=0,
        reflector_options={"use_watch_list": False, "on_watch_error": errors.append},
    )
    echo = Echo(manager.factory, registry)
    manager.add(echo)
    api_server.faults.error_rate = 1.0  # the first attempts fail, and both callbacks hear of it
    api_server.clear_requests()
    starting = threading.Thread(target=manager.start)  # start() returns once the caches synced
    starting.start()
    try:
        eventually(lambda: errors, WAIT, what="the user's on_watch_error to be called")
        api_server.faults.error_rate = 0.0
        starting.join(WAIT)
        assert not starting.is_alive() and manager.factory.informer(CONFIGMAPS).has_synced()
        informer = manager.factory.informer(CONFIGMAPS)
        assert informer.reflector.use_watch_list is False
        configmap_gets = [
            r for r in api_server.requests if r.method == "GET" and r.path.endswith("/configmaps")
        ]
        assert configmap_gets and all(
            r.query.get("watch") not in ("true", "1") for r in configmap_gets[:1]
        )
    finally:
        api_server.faults.error_rate = 0.0
        starting.join(WAIT)
        manager.stop()
    with pytest.raises(TypeError, match="unknown reflector option"):
        make_manager(api_server, reflector_options={"use_watchlist": False})


def test_add_checks_what_it_is_given(api_server):
    manager, registry = make_manager(api_server)
    manager.add(Echo(manager.factory, registry))
    with pytest.raises(ValueError, match="already added"):
        manager.add(Echo(manager.factory, registry))
    with pytest.raises(TypeError):
        manager.add(object())
    manager.start()
    try:
        with pytest.raises(RuntimeError):
            manager.add(Echo(manager.factory, registry, name="late"))
    finally:
        manager.stop(5)


# -- configuration errors -----------------------------------------------------------------------


# The Manager and the SharedInformerFactory share one loader, so they fail the same way.
BUILDERS = {
    "manager": Manager,
    "factory": lambda path: SharedInformerFactory(kubeconfig=path, metrics_registry=False),
}


@pytest.mark.parametrize("build", BUILDERS.values(), ids=BUILDERS.keys())
def test_a_missing_kubeconfig_is_a_one_line_configuration_error_naming_the_file(tmp_path, build):
    path = tmp_path / "nope.yaml"
    with pytest.raises(ConfigurationError) as info:
        build(path)
    assert (
        "does not exist" in str(info.value)
        and str(path) in str(info.value)
        and "\n" not in str(info.value)
    )


@pytest.mark.parametrize("build", BUILDERS.values(), ids=BUILDERS.keys())
def test_a_malformed_kubeconfig_is_a_one_line_configuration_error_naming_the_file(tmp_path, build):
    path = tmp_path / "kubeconfig"
    path.write_text("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\n")
    with pytest.raises(ConfigurationError) as info:
        build(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_no_configuration_at_all_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    with pytest.raises(ConfigurationError, match="KUBECONFIG"):
        Manager()


def test_the_default_kubeconfig_is_the_one_kubeconfig_names_when_the_manager_is_built(
    api_server, tmp_path, monkeypatch
):
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    import kubernetes.config  # noqa: F401 -- reads $KUBECONFIG at import: the Manager must not rely on that

    monkeypatch.setenv("KUBECONFIG", api_server.write_kubeconfig(tmp_path / "late"))
    manager = Manager(metrics_port=0, health_port=0, metrics_registry=CollectorRegistry())
    assert manager.api_client.configuration.host == api_server.url
    manager.api_client.close()


def test_a_kubeconfig_path_may_start_with_a_tilde(api_server, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    api_server.write_kubeconfig(tmp_path / "kubeconfig")
    manager = Manager(
        "~/kubeconfig", metrics_port=0, health_port=0, metrics_registry=CollectorRegistry()
    )
    assert manager.api_client.configuration.host == api_server.url
    manager.api_client.close()


def test_in_a_pod_without_a_service_account_the_error_says_so(monkeypatch):
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    if os.path.exists("/var/run/secrets/kubernetes.io/serviceaccount/token"):  # pragma: no cover
        pytest.skip("this machine really is a Pod")
    with pytest.raises(ConfigurationError, match="in-cluster configuration"):
        Manager()


def test_an_unreachable_server_fails_fast_at_start_and_run_exits_with_the_message(
    api_server, tmp_path
):
    path = api_server.write_kubeconfig(tmp_path / "kubeconfig")
    text = (
        Path(path).read_text().replace(api_server.url, "http://127.0.0.1:9")
    )  # discard port: refused
    Path(path).write_text(text)
    manager = Manager(path, metrics_port=0, health_port=0, metrics_registry=CollectorRegistry())
    t0 = time.monotonic()
    with pytest.raises(SystemExit) as info:
        manager.run()
    assert time.monotonic() - t0 < 10
    message = str(info.value.code)
    assert (
        message.startswith("pyinformers: cannot reach the API server at http://127.0.0.1:9")
        and "\n" not in message
    )


def test_a_kubeconfig_for_the_test_server_works(kubeconfig):
    manager = Manager(
        kubeconfig, metrics_port=0, health_port=0, metrics_registry=CollectorRegistry()
    )
    manager.start()
    assert manager.stop(5)


# -- signals, in a subprocess -------------------------------------------------------------------

SCRIPT = textwrap.dedent(
    """
    import logging, sys, threading
    logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(name)s: %(message)s")
    from prometheus_client import CollectorRegistry
    from pyinformers.controller import Controller
    from pyinformers.manager import ANY_PORT, Manager
    from pyinformers.resources import CONFIGMAPS
    from pyinformers.testing import ApiServer

    BLOCK = sys.argv[1] == "block"

    class Announce(Controller):
        def __init__(self, factory, registry):
            super().__init__("announce", metrics_registry=registry, shutdown_timeout=60)
            self.watch(factory.informer(CONFIGMAPS))

        def reconcile(self, key):
            sys.stdout.write(f"RECONCILED {key}\\n")  # one write: log lines cannot split it
            sys.stdout.flush()
            if BLOCK:
                threading.Event().wait()  # never finishes: only a second signal ends us

    with ApiServer() as server:
        registry = CollectorRegistry()
        manager = Manager(api_client=server.api_client(), metrics_port=ANY_PORT, health_port=ANY_PORT,
                          bind_address="127.0.0.1", metrics_registry=registry, shutdown_timeout=60)
        manager.add(Announce(manager.factory, registry))
        manager.factory.client(CONFIGMAPS).create({"metadata": {"name": "x", "namespace": "default"}})
        manager.run()
        print("RUN RETURNED", flush=True)
    """
)


def _spawn(mode):
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen(
        [sys.executable, "-c", SCRIPT, mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=str(REPO),
    )
    lines: queue.Queue[str] = queue.Queue()

    def pump():
        for line in proc.stdout:
            lines.put(line.rstrip("\n"))
        lines.put("<EOF>")

    threading.Thread(target=pump, name="test-subprocess-reader", daemon=True).start()
    return proc, lines


# A cold interpreter importing the kubernetes client, then an API server and a Manager that syncs
# and reconciles: seconds on a quiet machine, but a loaded one was seen to print nothing in 30 s.
STARTUP = 90.0


def _expect(lines, fragment, output, timeout=30.0):
    deadline = time.monotonic() + timeout
    while True:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"never saw {fragment!r}; output:\n" + "\n".join(output)
        try:
            line = lines.get(timeout=remaining)
        except queue.Empty:
            continue
        output.append(line)
        if fragment in line:
            return
        assert line != "<EOF>", f"exited before {fragment!r}; output:\n" + "\n".join(output)


def test_sigterm_shuts_a_manager_down_cleanly_with_exit_code_0():
    proc, lines = _spawn("normal")
    output: list[str] = []
    try:
        _expect(lines, "RECONCILED default/x", output, STARTUP)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0, "\n".join(output)
        _expect(lines, "RUN RETURNED", output)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_a_second_signal_exits_at_once_when_a_reconcile_is_stuck():
    proc, lines = _spawn("block")
    output: list[str] = []
    try:
        _expect(lines, "RECONCILED default/x", output, STARTUP)
        proc.send_signal(signal.SIGINT)
        _expect(lines, "SIGINT received: shutting down", output)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 1
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


# -- the probe server on its own ------------------------------------------------------------------


def test_the_probe_server_answers_head_and_turns_a_failing_route_into_500():
    from pyinformers.manager._probes import ProbeServer

    def boom(query):
        raise RuntimeError("route failed")

    server = ProbeServer(
        "127.0.0.1", ANY_PORT, {"/ok": lambda q: (200, "text/plain", b"fine\n"), "/boom": boom}
    )
    server.start()
    try:
        host, port = server.address
        assert get((host, port), "/ok") == (200, "fine\n")
        assert get((host, port), "/boom")[0] == 500
        request = urllib.request.Request(f"http://{host}:{port}/ok", method="HEAD")
        with urllib.request.urlopen(request, timeout=WAIT) as response:
            assert response.status == 200 and response.read() == b""
    finally:
        assert server.stop(5)
    assert "ProbeServer" in repr(server)


def test_controllers_sharing_a_name_share_their_series():
    registry = CollectorRegistry()

    class Noop(Controller):
        def reconcile(self, key):
            return None

    a, b = Noop("twin", metrics_registry=registry), Noop("twin", metrics_registry=registry)
    for c in (a, b):
        c.queue.add("ns/x")
        key, _ = c.queue.get(timeout=0)
        c.process(key)
    value = registry.get_sample_value(
        "controller_runtime_reconcile_total", {"controller": "twin", "result": "success"}
    )
    assert value == 2
    assert (
        registry.get_sample_value(
            "controller_runtime_max_concurrent_reconciles", {"controller": "twin"}
        )
        == 2
    )


def test_stop_lets_an_in_flight_reconcile_finish_and_reports_shutting_down(api_server):
    entered, release = threading.Event(), threading.Event()
    finished = []

    class Slow(Controller):
        def __init__(self, factory, registry):
            super().__init__("slow", metrics_registry=registry)
            self.watch(factory.informer(CONFIGMAPS))

        def reconcile(self, key):
            entered.set()
            release.wait(WAIT)
            finished.append(key)

    manager, registry = make_manager(api_server)
    manager.add(Slow(manager.factory, registry))
    manager.factory.client(CONFIGMAPS).create(
        {"metadata": {"name": "slow", "namespace": "default"}}
    )
    manager.start()
    assert entered.wait(WAIT)
    result = []
    stopper = threading.Thread(
        target=lambda: result.append(manager.stop(WAIT)), name="test-manager-stop"
    )
    stopper.start()

    def shutting_down():  # the probe server stays up while controllers drain
        answer = get(manager.health_address, "/readyz")
        return answer if "shutting down" in answer[1] else None

    status, body = eventually(
        shutting_down, timeout=WAIT, what="/readyz to say it is shutting down"
    )
    assert status == 503 and finished == []
    release.set()
    stopper.join(WAIT)
    assert result == [True] and finished == ["default/slow"]


def test_the_cache_transform_reaches_the_factory_and_shares_the_cached_strings(api_server):
    from pyinformers.api import ResourceClient
    from pyinformers.cache import chain, drop_managed_fields, share_strings

    configmaps = ResourceClient(api_server.api_client(), CONFIGMAPS)
    for name in ("a", "b"):
        configmaps.create(
            {"metadata": {"name": name, "namespace": "default"}, "data": {"mode": "fast" * 3}}
        )
    shared, _ = make_manager(
        api_server,
        metrics_port=0,
        health_port=0,
        cache_transform=chain(drop_managed_fields, share_strings),
    )
    plain, _ = make_manager(api_server, metrics_port=0, health_port=0)
    for manager in (shared, plain):
        informer = manager.factory.informer(CONFIGMAPS)
        manager.start()
        try:
            a, b = (informer.lister.get(n, namespace="default") for n in ("a", "b"))
            assert a["data"] == b["data"] == {"mode": "fastfastfast"}
            assert "managedFields" not in a["metadata"]
            # decoded separately, the two values are one string only when shared
            assert (a["data"]["mode"] is b["data"]["mode"]) is (manager is shared)
        finally:
            manager.stop()
    with pytest.raises(TypeError, match="transform must be callable"):
        make_manager(api_server, cache_transform="share")
