"""Network faults between an informer and either server (``--k8s-server=real|both`` for kube-apiserver).

The informer talks to the server through :class:`TcpFaultProxy`; writes go
straight to the server. Connections cut abruptly (TCP RST, as a crashed load
balancer or node does) while changes keep coming: the informer re-watches
from the last resourceVersion it saw, never relists, and its cache ends equal
to the server's. A stalled connection (open, silent) is caught by the stall
timeout and re-opened, again without a relist.
"""

from __future__ import annotations

import pytest

from pyinformers.api._client import ResourceClient
from pyinformers.resources import CONFIGMAPS
from pyinformers.testing import eventually
from tests.support.informers import FAST_REFLECTOR, configmap, make_informer, versions
from tests.support.tcp_fault_proxy import client_through

pytestmark = pytest.mark.timeout(180)

WAIT = 60.0  # a real control plane shares two cores with everything else


def _server_state(client: ResourceClient, namespace: str) -> dict[str, str]:
    return versions(client.list(namespace).items)


def test_connections_cut_with_a_reset_mid_stream_resume_the_watch_without_a_relist(
    k8s, informers, proxies
):
    direct = ResourceClient(k8s.api_client(), CONFIGMAPS)
    for i in range(20):
        direct.create(configmap(f"cm-{i:02d}", k8s.namespace))
    api, proxy = client_through(k8s, proxies)
    informer = make_informer(
        api, CONFIGMAPS, namespace=k8s.namespace, reflector_options=dict(FAST_REFLECTOR)
    )
    informers.append(informer)
    informer.start()
    assert informer.wait_for_cache_sync(WAIT)
    stats = informer.reflector.stats
    for round_ in range(3):
        eventually(
            lambda: proxy.open_connections() >= 1, WAIT, what="a watch connection through the proxy"
        )
        accepted = proxy.accepted
        assert proxy.reset() >= 1
        # Changes while the informer is cut off, and while it reconnects.
        direct.create(configmap(f"new-{round_}", k8s.namespace))
        direct.patch(f"cm-{round_:02d}", {"data": {"round": str(round_)}}, k8s.namespace)
        direct.delete(f"cm-{10 + round_:02d}", k8s.namespace)
        eventually(lambda: proxy.accepted > accepted, WAIT, what="a new connection after the reset")
        eventually(
            lambda: versions(informer.indexer.list()) == _server_state(direct, k8s.namespace),
            WAIT,
            what=f"the cache to equal the server after reset {round_ + 1}",
        )
    assert stats.relists == 0 and stats.lists == 1, (
        "a cut connection must resume the watch, not relist"
    )
    assert informer.healthy()


def test_a_stalled_connection_is_caught_by_the_stall_timeout_and_reopened_without_a_relist(
    k8s, informers, proxies
):
    direct = ResourceClient(k8s.api_client(), CONFIGMAPS)
    direct.create(configmap("before", k8s.namespace))
    api, proxy = client_through(k8s, proxies)
    informer = make_informer(
        api,
        CONFIGMAPS,
        namespace=k8s.namespace,
        reflector_options=dict(FAST_REFLECTOR, stall_timeout=2.0),
    )
    informers.append(informer)
    informer.start()
    assert informer.wait_for_cache_sync(WAIT)
    stats = informer.reflector.stats
    eventually(
        lambda: proxy.open_connections() >= 1, WAIT, what="a watch connection through the proxy"
    )
    accepted = proxy.accepted
    proxy.stall()
    direct.create(configmap("during-the-stall", k8s.namespace))
    # The stalled watch is abandoned and a new connection opened; new bytes flow once resumed.
    eventually(
        lambda: proxy.accepted > accepted, WAIT, what="a new connection after the stall timeout"
    )
    proxy.resume()
    eventually(
        lambda: versions(informer.indexer.list()) == _server_state(direct, k8s.namespace),
        WAIT,
        what="the cache to equal the server after the stall",
    )
    assert stats.relists == 0 and stats.lists == 1


def test_a_watch_request_sent_into_a_stalled_connection_gives_up_after_the_header_timeout(
    k8s, informers, proxies, monkeypatch
):
    """The stall timeout watches started streams; a request whose answer never starts has its own bound."""
    import pyinformers.api._client

    monkeypatch.setattr(pyinformers.api._client, "WATCH_HEADER_TIMEOUT", 1.0)
    monkeypatch.setattr(
        pyinformers.api._client, "CONNECT_TIMEOUT", 1.0
    )  # a TLS handshake into the stall
    direct = ResourceClient(k8s.api_client(), CONFIGMAPS)
    direct.create(configmap("before", k8s.namespace))
    api, proxy = client_through(k8s, proxies)
    informer = make_informer(
        api, CONFIGMAPS, namespace=k8s.namespace, reflector_options=dict(FAST_REFLECTOR)
    )
    informers.append(informer)
    informer.start()
    assert informer.wait_for_cache_sync(WAIT)
    eventually(lambda: informer.reflector.stats.watches >= 1, WAIT, what="the first watch")
    proxy.stall()
    accepted = proxy.accepted
    proxy.reset()  # every re-watch now goes into a connection that never answers
    eventually(
        lambda: proxy.accepted >= accepted + 3,
        WAIT,
        what="the re-watches to give up on unanswered requests and try again",
    )
    direct.create(configmap("after", k8s.namespace))
    proxy.resume()
    eventually(
        lambda: versions(informer.indexer.list()) == _server_state(direct, k8s.namespace),
        WAIT,
        what="the cache to equal the server once the connection flows again",
    )
    assert informer.reflector.stats.relists == 0
