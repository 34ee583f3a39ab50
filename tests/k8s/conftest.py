"""Fixtures of the tests that run on either server."""

from __future__ import annotations

import pytest

from tests.support.tcp_fault_proxy import TcpFaultProxy


@pytest.fixture
def proxies():
    """``factory(host, port) -> TcpFaultProxy``; every proxy made is closed after the test."""
    made = []

    def factory(host, port):
        proxy = TcpFaultProxy(host, port)
        made.append(proxy)
        return proxy

    yield factory
    for proxy in made:
        proxy.close()
