"""The lean write path (pyinformers.api._http) against the official one, over real HTTP to the embedded server.

Each behaviour is checked on both paths: the lean one (the default) and the
official ``call_api`` one (the lean path switched off), which must agree.
"""

import threading

import pytest
import urllib3
from kubernetes import client as k8s

from pyinformers.api import (
    AlreadyExists,
    Conflict,
    NotFound,
    ResourceClient,
    TooManyRequests,
    _http,
)
from pyinformers.resources import CONFIGMAPS, DEPLOYMENTS
from tests.support.objects import deployment

PATHS = ["lean", "call_api"]


@pytest.fixture(params=PATHS)
def path(request, monkeypatch):
    if request.param == "call_api":
        monkeypatch.setattr(_http, "lean_requests", lambda api_client: None)
    return request.param


def _pool(api_client):
    return api_client.rest_client.pool_manager.connection_from_url(api_client.configuration.host)


def test_every_kind_of_write_goes_on_the_lean_path_and_leaves_the_same_objects(api_client, path):
    deployments = ResourceClient(api_client, DEPLOYMENTS)
    pool = _pool(api_client)
    before = pool.num_requests  # urllib3 counts the requests it sends itself
    created = deployments.create(deployment("web"))
    replaced = deployments.replace(dict(deployment("web", 2), metadata=dict(created["metadata"])))
    status = deployments.replace_status(
        dict(replaced, status={"observedGeneration": 1, "replicas": 2})
    )
    merged = deployments.patch("web", {"metadata": {"labels": {"m": "1"}}}, "default")
    json_patched = deployments.patch(
        "web",
        [{"op": "add", "path": "/metadata/labels/j", "value": "2"}],
        "default",
        patch_type="json",
    )
    strategic = deployments.patch(
        "web", {"metadata": {"labels": {"s": "3"}}}, "default", patch_type="strategic"
    )
    applied = deployments.patch(  # server-side apply, on both paths
        "web",
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "labels": {"a": "4"}},
        },
        "default",
        patch_type="apply",
        field_manager="tester",
        force=True,
    )
    deleted = deployments.delete("web", "default")
    assert replaced["spec"]["replicas"] == 2 and status["status"]["replicas"] == 2
    assert (
        merged["metadata"]["labels"]["m"] == "1" and json_patched["metadata"]["labels"]["j"] == "2"
    )
    assert strategic["metadata"]["labels"]["s"] == "3" and applied["metadata"]["labels"]["a"] == "4"
    assert deleted.get("kind") in ("Deployment", "Status")
    with pytest.raises(NotFound):
        deployments.get("web", "default")
    sent_by_urllib3 = pool.num_requests - before
    assert sent_by_urllib3 == (
        1 if path == "lean" else 9
    )  # the lean path: only the get went through urllib3


def test_error_answers_raise_the_same_typed_errors(api_client, path):
    configmaps = ResourceClient(api_client, CONFIGMAPS)
    created = configmaps.create({"metadata": {"name": "dup"}, "data": {"k": "v"}}, "default")
    with pytest.raises(AlreadyExists):
        configmaps.create({"metadata": {"name": "dup"}}, "default")
    configmaps.patch("dup", {"data": {"k": "newer"}}, "default")
    with pytest.raises(Conflict):
        configmaps.replace(created)
    with pytest.raises(NotFound):
        configmaps.delete("missing", "default")


def test_a_put_answered_429_with_retry_after_is_retried_as_urllib3_does_a_post_is_not(
    api_server, api_client, path
):
    configmaps = ResourceClient(api_client, CONFIGMAPS)
    created = configmaps.create({"metadata": {"name": "t"}, "data": {"k": "v"}}, "default")
    api_server.faults.throttle_rate = 1.0
    api_server.faults.retry_after = 1  # urllib3 sleeps Retry-After before each of its 3 retries
    api_server.clear_requests()
    # PUT is idempotent: retried 3 times, then the 4th answer raises
    with pytest.raises(TooManyRequests):
        configmaps.replace(created)
    puts = [r for r in api_server.requests if r.method == "PUT"]
    api_server.clear_requests()
    with pytest.raises(TooManyRequests) as refused:  # POST: not in urllib3's retryable methods
        configmaps.create({"metadata": {"name": "u"}}, "default")
    posts = [r for r in api_server.requests if r.method == "POST"]
    assert len(puts) == 4 and len(posts) == 1 and refused.value.retry_after == 1.0


def test_a_keep_alive_connection_the_server_dropped_is_replaced_before_the_write(
    api_server, api_client, path
):
    configmaps = ResourceClient(api_client, CONFIGMAPS)
    configmaps.create({"metadata": {"name": "before"}}, "default")
    api_server.restart()  # every open connection is closed by the server
    assert (
        configmaps.create({"metadata": {"name": "after"}}, "default")["metadata"]["name"] == "after"
    )


def test_a_slow_answer_past_the_read_timeout_raises_read_timeout_error_and_is_not_retried_for_post(
    api_server, api_client, path
):
    configuration = api_client.configuration
    configuration.retries = False
    no_retries = k8s.ApiClient(configuration)
    try:
        configmaps = ResourceClient(no_retries, CONFIGMAPS, request_timeout=0.2)
        api_server.faults.latency = 1.0
        with pytest.raises(urllib3.exceptions.ReadTimeoutError):
            configmaps.create({"metadata": {"name": "slow"}}, "default")
    finally:
        api_server.faults.latency = 0.0
        no_retries.close()


def test_many_threads_write_at_once_each_on_a_connection_of_its_own(api_client, path):
    configmaps = ResourceClient(api_client, CONFIGMAPS)
    errors = []

    def write(k: int) -> None:
        try:
            for i in range(10):
                configmaps.create(
                    {"metadata": {"name": f"c-{k}-{i}"}, "data": {"v": "x" * 5000}}, "default"
                )
        except Exception as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=write, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors
    assert len(configmaps.list("default").items) == 80


def test_a_client_with_a_proxy_or_a_test_double_keeps_the_official_path(api_server):
    configuration = k8s.Configuration(host=api_server.url)
    configuration.proxy = "http://127.0.0.1:9"
    proxied = k8s.ApiClient(configuration)
    try:
        assert _http.lean_requests(proxied) is None
    finally:
        proxied.close()

    class Double:
        configuration = None

    assert _http.lean_requests(Double()) is None


def test_a_body_orjson_cannot_encode_is_serialised_by_the_client_first(api_client, path):
    configmaps = ResourceClient(api_client, CONFIGMAPS)
    meta = k8s.V1ObjectMeta(name="typed-meta", labels={"a": "b"})
    created = configmaps.create({"metadata": meta, "data": {"k": "v"}}, "default")
    assert created["metadata"]["labels"] == {"a": "b"}


def test_a_redirected_write_is_sent_again_on_the_official_path_which_follows_it(api_server, path):
    import socket

    target = api_server.url
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    seen: list[bytes] = []

    def redirect_all() -> None:  # a front that answers every request 307 to the real server
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                head, _, body = data.partition(b"\r\n\r\n")
                length = int(
                    next(
                        (
                            line.split(b":")[1]
                            for line in head.split(b"\r\n")
                            if line.lower().startswith(b"content-length")
                        ),
                        b"0",
                    )
                )
                while len(body) < length:
                    body += conn.recv(65536)
                seen.append(head.split(b"\r\n")[0])
                request_target = head.split(b" ")[1].decode()
                conn.sendall(
                    f"HTTP/1.1 307 Temporary Redirect\r\nLocation: {target}{request_target}\r\n"
                    "Content-Length: 0\r\nConnection: close\r\n\r\n".encode()
                )

    thread = threading.Thread(target=redirect_all, daemon=True)
    thread.start()
    configuration = k8s.Configuration(host=f"http://127.0.0.1:{listener.getsockname()[1]}")
    configuration.api_key = dict(api_server.api_client().configuration.api_key)
    front = k8s.ApiClient(configuration)
    try:
        created = ResourceClient(front, CONFIGMAPS).create(
            {"metadata": {"name": "moved"}}, "default"
        )
        assert created["metadata"]["name"] == "moved"
    finally:
        front.close()
        listener.close()
    # the lean path's attempt (when it is on) and the official path's, each redirected once
    assert len(seen) == (2 if path == "lean" else 1)
    assert (
        ResourceClient(api_server.api_client(), CONFIGMAPS).get("moved", "default")["metadata"][
            "name"
        ]
        == "moved"
    )


def test_the_lean_path_does_not_keep_a_discarded_client_alive(api_server):
    import gc
    import weakref

    client = api_server.api_client()
    ResourceClient(client, CONFIGMAPS).create({"metadata": {"name": "w"}}, "default")
    assert _http.lean_requests(client) is not None
    ref = weakref.ref(client)
    client.close()
    del client
    gc.collect()
    assert ref() is None
