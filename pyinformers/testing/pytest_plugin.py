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
``api_server_factory``
    A callable ``factory(**options) -> ApiServer`` that starts servers with
    :class:`~pyinformers.testing.ApiServer` options and stops them all after
    the test.

Options for ``api_server`` itself can also be set per test with the
``apiserver`` marker (registered by this plugin when it is loaded from a
``conftest.py``)::

    @pytest.mark.apiserver(simulate_workloads=True, bookmark_interval=0.1)
    def test_something(api_server): ...
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

import pytest

from pyinformers.testing.server import ApiServer

__all__ = ["api_server", "api_server_factory", "kubeconfig", "api_client"]


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "apiserver(**options): options for the api_server fixture's ApiServer")


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
