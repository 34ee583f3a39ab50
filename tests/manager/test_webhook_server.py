"""The webhook server: reviews over HTTPS, bad requests, deadlines, floods, rotation and a graceful stop."""

from __future__ import annotations

import http.client
import shutil
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from pyinformers.api import Resource
from pyinformers.manager import ANY_PORT, TLSFiles, WebhookServer
from pyinformers.testing import eventually
from pyinformers.webhook import AdmissionRequest, Denied, Webhooks

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command")

FOOS = Resource("samplecontroller.k8s.io", "v1alpha1", "foos", "Foo")


def _certs(directory: Path) -> tuple[TLSFiles, Path]:
    from pyinformers.testing.envtest import make_serving_certs

    certs = make_serving_certs(directory)
    return TLSFiles(str(certs.cert), str(certs.key)), certs.ca_cert


def _review(uid: str = "u-1", replicas: Any = None) -> bytes:
    spec = {} if replicas is None else {"replicas": replicas}
    return orjson.dumps(
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": uid,
                "operation": "CREATE",
                "namespace": "ns",
                "name": "f",
                "kind": {"group": FOOS.group, "version": FOOS.version, "kind": "Foo"},
                "resource": {"group": FOOS.group, "version": FOOS.version, "resource": "foos"},
                "userInfo": {"username": "alice"},
                "object": {
                    "apiVersion": FOOS.api_version,
                    "kind": "Foo",
                    "metadata": {"name": "f"},
                    "spec": spec,
                },
            },
        }
    )


class _Hooks:
    def __init__(self) -> None:
        self.webhooks = Webhooks("server-tests")
        self.entered = threading.Event()
        self.release = threading.Event()
        self.webhooks.mutating(FOOS)(self.default)
        self.webhooks.validating(FOOS)(self.validate)

    def default(self, request: AdmissionRequest) -> None:
        if request.object["spec"].get("replicas") == "slow":
            self.entered.set()
            self.release.wait(10)
        request.object["spec"].setdefault("replicas", 1)

    def validate(self, request: AdmissionRequest) -> Any:
        return Denied("no") if request.object["spec"].get("replicas") == 0 else None


@pytest.fixture
def tls(tmp_path: Path) -> tuple[TLSFiles, Path]:
    return _certs(tmp_path / "certs")


@pytest.fixture
def serve(tls: tuple[TLSFiles, Path]) -> Iterator[Any]:
    servers: list[WebhookServer] = []

    def start(hooks: Webhooks, **options: Any) -> WebhookServer:
        server = WebhookServer(hooks, "127.0.0.1", ANY_PORT, tls=tls[0], **options)
        server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop(timeout=2)


def _context(ca: Path) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(ca))


def _post(
    server: WebhookServer,
    ca: Path,
    path: str,
    body: bytes,
    headers: Any = None,
    timeout: float = 10,
) -> tuple[int, bytes]:
    host, port = server.address  # type: ignore[misc]
    conn = http.client.HTTPSConnection(host, port, context=_context(ca), timeout=timeout)
    try:
        conn.request(
            "POST", path, body=body, headers={"Content-Type": "application/json", **(headers or {})}
        )
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def test_a_review_posted_over_https_is_answered_and_keep_alive_serves_the_next(
    serve: Any, tls: Any
) -> None:
    hooks = _Hooks()
    server = serve(hooks.webhooks)
    assert server.serving and server.url.startswith("https://127.0.0.1:")
    host, port = server.address
    conn = http.client.HTTPSConnection(host, port, context=_context(tls[1]), timeout=10)
    try:
        for uid in ("a", "b"):
            conn.request(
                "POST",
                "/mutate/default-foos.samplecontroller.k8s.io?timeout=10s",
                body=_review(uid),
            )
            response = conn.getresponse()
            answer = orjson.loads(response.read())
            assert response.status == 200 and answer["response"]["uid"] == uid
            assert answer["response"]["patchType"] == "JSONPatch"
    finally:
        conn.close()
    status, body = _post(
        server, tls[1], "/validate/validate-foos.samplecontroller.k8s.io", _review(replicas=0)
    )
    assert status == 200 and orjson.loads(body)["response"]["allowed"] is False
    assert server.reviews["/mutate/default-foos.samplecontroller.k8s.io"] == 2


def test_bad_requests_get_a_400_413_411_or_404_with_a_reason(serve: Any, tls: Any) -> None:
    server = serve(_Hooks().webhooks, max_body=4096)
    path = "/validate/validate-foos.samplecontroller.k8s.io"
    assert _post(server, tls[1], path, b"{nope")[0] == 400
    status, body = _post(
        server, tls[1], path, b'{"apiVersion": "admission.k8s.io/v1", "kind": "Nope"}'
    )
    assert status == 400 and b"expected kind AdmissionReview" in body
    status, body = _post(server, tls[1], path, b"x" * 5000)
    assert status == 413 and b"larger than 4096 bytes" in body
    assert _post(server, tls[1], "/validate/nothing", b"{}")[0] == 404
    host, port = server.address
    with (
        socket.create_connection((host, port)) as raw,
        _context(tls[1]).wrap_socket(raw, server_hostname=host) as s,
    ):
        s.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n".encode())
        assert s.recv(4096).startswith(
            b"HTTP/1.1 411"
        )  # chunked bodies are not read: say what is needed
    assert _post(server, tls[1], path, _review())[0] == 200  # still serving


def test_half_open_connections_and_stuck_handshakes_do_not_stop_it_serving_others(
    serve: Any, tls: Any
) -> None:
    server = serve(_Hooks().webhooks, max_connections=32, read_timeout=2.0)
    flood: list[socket.socket] = []
    try:
        for i in range(1000):
            s = socket.create_connection(server.address)
            if i % 2:
                s.sendall(b"\x16\x03\x01\x00\xff\x01")  # a TLS ClientHello that never finishes
            flood.append(s)
        started = time.monotonic()
        status, _ = _post(
            server, tls[1], "/validate/validate-foos.samplecontroller.k8s.io", _review(), timeout=10
        )
        assert status == 200
        assert time.monotonic() - started < 5
    finally:
        for s in flood:
            s.close()


def test_a_connection_that_sends_nothing_is_cut_at_the_deadline(serve: Any) -> None:
    server = serve(_Hooks().webhooks, read_timeout=0.5)
    with socket.create_connection(server.address) as s:
        s.settimeout(10)
        started = time.monotonic()
        try:
            assert s.recv(1) == b""
        except ConnectionResetError:
            pass
        assert time.monotonic() - started < 5


def test_a_stop_lets_reviews_in_flight_finish_and_answers_no_new_ones(serve: Any, tls: Any) -> None:
    hooks = _Hooks()
    server = serve(hooks.webhooks)
    answers: list[tuple[int, bytes]] = []
    slow = threading.Thread(
        target=lambda: answers.append(
            _post(
                server,
                tls[1],
                "/mutate/default-foos.samplecontroller.k8s.io",
                _review(replicas="slow"),
            )
        )
    )
    slow.start()
    assert hooks.entered.wait(10)
    stopped: list[bool] = []
    stopper = threading.Thread(target=lambda: stopped.append(server.stop(timeout=10)))
    stopper.start()
    eventually(lambda: not server.serving, 5, what="the server to stop accepting")
    hooks.release.set()
    slow.join(10)
    stopper.join(10)
    assert stopped == [True]
    assert (
        answers
        and answers[0][0] == 200
        and orjson.loads(answers[0][1])["response"]["allowed"] is True
    )
    with pytest.raises(OSError):
        _post(server, tls[1], "/mutate/default-foos.samplecontroller.k8s.io", _review(), timeout=2)


def test_the_certificate_is_reloaded_when_its_files_change(serve: Any, tmp_path: Path) -> None:
    first, first_ca = _certs(tmp_path / "first")
    second, second_ca = _certs(tmp_path / "second")
    live = TLSFiles(str(tmp_path / "tls.crt"), str(tmp_path / "tls.key"))
    shutil.copy(first.cert_file, live.cert_file)
    shutil.copy(first.key_file, live.key_file)
    server = WebhookServer(_Hooks().webhooks, "127.0.0.1", ANY_PORT, tls=live)
    server.start()
    try:
        path = "/validate/validate-foos.samplecontroller.k8s.io"
        assert _post(server, first_ca, path, _review())[0] == 200
        shutil.copy(second.cert_file, live.cert_file)
        shutil.copy(second.key_file, live.key_file)

        def rotated() -> bool:
            try:
                return _post(server, second_ca, path, _review(), timeout=2)[0] == 200
            except ssl.SSLError:
                return False

        eventually(rotated, 10, what="the new certificate served")
    finally:
        server.stop()


def test_a_webhook_server_needs_tls_and_distinct_paths(tls: Any) -> None:
    hooks = _Hooks().webhooks
    with pytest.raises(ValueError, match="HTTPS"):
        WebhookServer(hooks, "127.0.0.1", ANY_PORT, tls=None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="two registries serve"):
        WebhookServer([hooks, hooks], "127.0.0.1", ANY_PORT, tls=tls[0])
