"""Pytest fixtures for testing controllers against the in-process API server.

Enable with ``pytest_plugins = ["pyinformers.testing.pytest_plugin"]`` in a
``conftest.py`` (or at the top of a test module). Fixtures:

``api_server``
    A fresh, started :class:`~pyinformers.testing.ApiServer` per test
    (starting one takes a few milliseconds), stopped afterwards.
``kubeconfig``
    The path of a kubeconfig file for ``api_server`` (in ``tmp_path``), for
    code that takes a kubeconfig (``kubernetes.config.load_kube_config``,
    ``SharedInformerFactory(kubeconfig=...)``, ``Manager(kubeconfig=...)``).
``api_client``
    A ``kubernetes.client.ApiClient`` connected to ``api_server``; closed
    afterwards.
``cache_mutations``
    A callable returning the cache mutations reported during the test (see
    below), for a test that changes a cached object on purpose.
``api_server_factory``
    A callable ``factory(**options) -> ApiServer`` that starts servers with
    :class:`~pyinformers.testing.ApiServer` options and stops them all after
    the test.

The cache mutation detector
---------------------------

While the plugin is loaded, every informer built in a test fingerprints its
cached objects (:mod:`pyinformers.cache._mutation`), and a test during which
a handler, a reconcile or anything else changed a cached object in place
fails, naming the object, the path that changed and who changed it. A test
that means to (a test of the detector) takes the ``cache_mutations`` fixture
and reads the reports instead. ``--cache-mutation-detector=off`` turns the
detector off for the run.

Options for ``api_server`` itself can also be set per test with the
``apiserver`` marker (registered by this plugin when it is loaded from a
``conftest.py``)::

    @pytest.mark.apiserver(simulate_workloads=True, bookmark_interval=0.1)
    def test_something(api_server): ...

Either server: the ``k8s`` fixture
----------------------------------

``k8s``
    A :class:`~pyinformers.testing._clusters.Cluster` for the test: a fresh
    embedded server, or the session's one real
    :class:`~pyinformers.testing.envtest.ControlPlane` (etcd,
    kube-apiserver and kube-controller-manager, started on first use and
    stopped at the end of the run), with a fresh namespace of the test's own
    either way (``k8s.namespace``). ``k8s.api_client()``,
    ``k8s.write_kubeconfig()``, ``k8s.client_for_service_account(...)``
    (real only), ``k8s.simulate_workloads()``.
``k8s_control_plane``
    The session's :class:`~pyinformers.testing.envtest.ControlPlane`
    (skips the test when the binaries are missing).

Which server a run uses is chosen once: ``--k8s-server=embedded|real|both``
(or ``PYINFORMERS_TEST_SERVER``; default ``embedded``). With ``both``, every
test using ``k8s`` runs twice (``[embedded]`` and ``[real]``). A test that
only makes sense on one server says so with ``@pytest.mark.k8s_server("real")``;
on a run without that server it is skipped. Without binaries
(``make envtest``), real-server tests are skipped with one line saying where
they were looked for.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pyinformers.cache import clear_mutations, mutations
from pyinformers.cache._mutation import set_default as set_mutation_default
from pyinformers.testing._clusters import REAL, Cluster, namespace_for, selected_servers
from pyinformers.testing.apiserver._server import ApiServer

__all__ = [
    "api_server",
    "api_server_factory",
    "kubeconfig",
    "api_client",
    "k8s",
    "k8s_control_plane",
    "cache_mutations",
]


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("pyinformers")
    group.addoption(
        "--k8s-server",
        dest="k8s_server",
        default=None,
        choices=("embedded", "real", "both"),
        help="the API server tests using the k8s fixture run against (default: $PYINFORMERS_TEST_SERVER or embedded)",
    )
    group.addoption(
        "--cache-mutation-detector",
        dest="cache_mutation_detector",
        default="on",
        choices=("on", "off"),
        help="fingerprint cached objects and fail a test that changes one in place (default: on)",
    )


def pytest_configure(config: Any) -> None:
    config.addinivalue_line(
        "markers", "apiserver(**options): options for the api_server fixture's ApiServer"
    )
    config.addinivalue_line(
        "markers", "k8s_server(*kinds): run this k8s test only on these servers (embedded, real)"
    )
    config.addinivalue_line(
        "markers", "k8s: uses the k8s fixture (added automatically; `-m k8s` selects them)"
    )
    set_mutation_default(config.getoption("cache_mutation_detector", "on") != "off")


def pytest_unconfigure(config: Any) -> None:
    set_mutation_default(None)


_EXPECTS_MUTATIONS = pytest.StashKey[bool]()


@pytest.fixture(autouse=True)
def _pyinformers_no_cache_mutations(request: Any) -> Iterator[None]:
    """Fail the test if a cached object was changed in place during it (unless it takes ``cache_mutations``)."""
    clear_mutations()
    yield
    found = clear_mutations()
    if found and not request.node.stash.get(_EXPECTS_MUTATIONS, False):
        pytest.fail(
            "a cached object was changed in place:\n" + "\n".join(str(m) for m in found),
            pytrace=False,
        )


@pytest.fixture
def cache_mutations(request: Any) -> Callable[[], list]:
    """The cache mutations reported so far in this test (the test is not failed for them)."""
    request.node.stash[_EXPECTS_MUTATIONS] = True
    return mutations


def _kind_of(item: Any) -> str | None:
    """The server an item runs on: its k8s parameter, "real" for k8s_control_plane users, else None."""
    callspec = getattr(item, "callspec", None)
    param = callspec.params.get("k8s") if callspec is not None else None
    if isinstance(param, tuple):
        return "other"
    if param is not None:
        return param
    return REAL if "k8s_control_plane" in getattr(item, "fixturenames", ()) else None


_UNRUNNABLE = pytest.StashKey[list]()


def pytest_collection_modifyitems(config: Any, items: list) -> None:
    """Mark k8s tests; leave out (in one summary line each) those this run cannot serve."""
    missing: str | None = None
    servers = _servers(config)
    if REAL in servers:
        from pyinformers.testing.envtest._assets import MissingBinaries, find_binaries

        try:
            find_binaries()
        except MissingBinaries as exc:
            missing = str(exc)
    keep, real_skipped, other_server = [], [], []
    for item in items:
        kind = _kind_of(item)
        if kind is not None:
            item.add_marker(pytest.mark.k8s)
        if kind == REAL and missing:
            real_skipped.append(item)
        elif kind == "other" or (kind == REAL and REAL not in servers):
            # k8s_control_plane users need the real server, which this run does not use
            other_server.append(item)
        else:
            keep.append(item)
    if real_skipped or other_server:
        config.hook.pytest_deselected(items=real_skipped + other_server)
        items[:] = keep
    lines = []
    if real_skipped:
        lines.append(f"{len(real_skipped)} real-server tests skipped: {missing}")
    if other_server:
        lines.append(
            f"{len(other_server)} tests for a server this run does not use (k8s_server(...) marker or "
            f"k8s_control_plane fixture; --k8s-server={'/'.join(servers)}) left out"
        )
    config.stash[_UNRUNNABLE] = lines


def pytest_terminal_summary(terminalreporter: Any, exitstatus: Any, config: Any) -> None:
    for line in config.stash.get(_UNRUNNABLE, []):
        terminalreporter.write_line(line, yellow=True)


def _servers(config: Any) -> tuple[str, ...]:
    return selected_servers(config.getoption("k8s_server", None))


def pytest_report_header(config: Any) -> str | None:
    servers = _servers(config)
    if REAL not in servers:
        return f"k8s fixture server: {', '.join(servers)}"
    from pyinformers.testing.envtest._assets import MissingBinaries, find_binaries

    try:
        where = f"binaries in {find_binaries().directory}"
    except MissingBinaries as exc:
        where = f"real-server tests will be skipped: {exc}"
    return f"k8s fixture server: {', '.join(servers)} ({where})"


def pytest_generate_tests(metafunc: Any) -> None:
    if "k8s" not in metafunc.fixturenames:
        return
    selected = _servers(metafunc.config)
    marker = metafunc.definition.get_closest_marker("k8s_server")
    allowed = tuple(marker.args) if marker else selected
    kinds = [k for k in selected if k in allowed]
    if kinds:
        metafunc.parametrize("k8s", kinds, indirect=True, ids=kinds)
    else:
        # skipped by the fixture (one place), so the summary groups them into one line
        metafunc.parametrize(
            "k8s", [("skip", tuple(allowed))], indirect=True, ids=list(allowed[:1])
        )


class _SessionControlPlane:
    """The run's one ControlPlane, started on first use; a start failure is remembered."""

    def __init__(self) -> None:
        self.control_plane: Any = None
        self.failure: BaseException | None = None

    def get(self) -> Any:
        from pyinformers.testing.envtest._assets import find_binaries
        from pyinformers.testing.envtest._controlplane import ControlPlane, MissingBinaries

        if self.failure is not None:
            if isinstance(self.failure, MissingBinaries):
                pytest.skip(str(self.failure))
            pytest.fail(f"the test control plane failed to start: {self.failure}", pytrace=False)
        if self.control_plane is None:
            try:
                # setup-envtest assets have no kube-controller-manager: run without one then
                binaries = find_binaries()
                cp = ControlPlane(
                    binary_dir=binaries.directory,
                    controller_manager=binaries.kube_controller_manager is not None,
                )
                cp.start()
            except (
                BaseException
            ) as exc:  # remembered: the next test skips or fails the same way, fast
                self.failure = exc
                return self.get()
            self.control_plane = cp
        self.control_plane.check()
        return self.control_plane

    def stop(self) -> None:
        if self.control_plane is not None:
            self.control_plane.stop()
            self.control_plane = None


@pytest.fixture(scope="session")
def _k8s_session_control_plane() -> Iterator[_SessionControlPlane]:
    holder = _SessionControlPlane()
    try:
        yield holder
    finally:
        holder.stop()


@pytest.fixture
def k8s_control_plane(_k8s_session_control_plane: _SessionControlPlane) -> Any:
    """The session's real ControlPlane (started on first use); skips when the binaries are missing."""
    return _k8s_session_control_plane.get()


@pytest.fixture
def k8s(
    request: Any, tmp_path: Any, _k8s_session_control_plane: _SessionControlPlane
) -> Iterator[Cluster]:
    """The server this run tests against, with a fresh namespace for this test."""
    kind = getattr(request, "param", None) or _servers(request.config)[0]
    if isinstance(kind, tuple):
        pytest.skip(
            f"k8s_server marker: test runs only on other servers than this run's --k8s-server={'/'.join(_servers(request.config))}"
        )
    embedded: ApiServer | None = None
    if kind == REAL:
        server = _k8s_session_control_plane.get()
    else:
        marker = request.node.get_closest_marker("apiserver")
        embedded = server = ApiServer(**(dict(marker.kwargs) if marker else {}))
        server.start()
    cluster = Cluster(kind, server, namespace_for(request.node.name), tmp_path)
    try:
        cluster.create_namespace()
        yield cluster
    finally:
        cluster.close()
        if embedded is not None:
            embedded.stop()
    if kind == REAL:
        server.check()  # a component that died during the test fails it, with its log tail


@pytest.fixture
def api_server(request: Any) -> Iterator[ApiServer]:
    """A started in-process API server, stopped after the test."""
    marker = request.node.get_closest_marker("apiserver")
    options = dict(marker.kwargs) if marker else {}
    server = ApiServer(**options)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def api_server_factory() -> Iterator[Callable[..., ApiServer]]:
    """Start servers with custom options; all are stopped after the test."""
    servers: list[ApiServer] = []

    def factory(**options: Any) -> ApiServer:
        server = ApiServer(**options)
        server.start()
        servers.append(server)
        return server

    try:
        yield factory
    finally:
        for server in servers:
            server.stop()


@pytest.fixture
def kubeconfig(api_server: ApiServer, tmp_path: Any) -> str:
    """Path to a kubeconfig file pointing at ``api_server``."""
    return api_server.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def api_client(api_server: ApiServer) -> Iterator[Any]:
    """A ``kubernetes.client.ApiClient`` for ``api_server``."""
    client = api_server.api_client()
    try:
        yield client
    finally:
        client.close()
