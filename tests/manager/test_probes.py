"""The metrics/probe server against a hostile network: read timeout, connection cap, quiet disconnects, TLS, guard."""

from __future__ import annotations

import http.client
import os
import shutil
import socket
import ssl
import struct
import subprocess
import time

import pytest

from pyinformers.manager._metrics_auth import ApiServerAuth, bearer_token
from pyinformers.manager._probes import ANY_PORT, ProbeServer, TLSFiles
from pyinformers.testing import eventually

ROUTES = {
    "/metrics": lambda q: (200, "text/plain", b"up 1\n"),
    "/healthz": lambda q: (200, "text/plain", b"ok\n"),
}


def _get(address, path="/healthz", headers=None, timeout=5.0):
    connection = http.client.HTTPConnection(*address, timeout=timeout)
    try:
        connection.request("GET", path, headers=headers or {})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


@pytest.fixture
def serve():
    servers = []

    def start(routes=ROUTES, **options):
        server = ProbeServer("127.0.0.1", ANY_PORT, routes, **options)
        server.start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


def _wait_closed(sock: socket.socket, deadline: float) -> bool:
    """True when the peer closed ``sock`` (EOF or reset) before ``deadline``."""
    sock.settimeout(max(0.01, deadline - time.monotonic()))
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_half_open_connections_are_closed_after_the_read_timeout(serve):
    server = serve(read_timeout=0.5)
    sockets = [socket.create_connection(server.address) for _ in range(30)]
    try:
        for s in sockets[::2]:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")  # headers never finished
        deadline = time.monotonic() + 10
        assert all(_wait_closed(s, deadline) for s in sockets), "a silent connection was held open"
    finally:
        for s in sockets:
            s.close()
    assert _get(server.address) == (200, b"ok\n")


def test_connections_beyond_the_cap_are_closed_at_once_and_served_again_later(serve):
    server = serve(max_connections=4, read_timeout=30)
    held = [socket.create_connection(server.address) for _ in range(4)]
    try:
        extra = socket.create_connection(
            server.address
        )  # accepted in order after the four: over the cap
        try:
            assert _wait_closed(extra, time.monotonic() + 10), (
                "a connection over the cap was accepted"
            )
        finally:
            extra.close()
    finally:
        for s in held:
            s.close()

    def answers():  # the held connections' threads see EOF and give their slots back
        try:
            return _get(server.address, timeout=2) == (200, b"ok\n")
        except (ConnectionError, http.client.HTTPException, TimeoutError):
            return False

    eventually(answers, timeout=10, what="the freed slots to serve again")


def test_clients_that_reset_their_connection_print_no_traceback(serve, capfd):
    server = serve(read_timeout=5)
    for _ in range(25):
        s = socket.create_connection(server.address)
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close with RST
        s.close()
    assert _get(server.address) == (200, b"ok\n")
    server.stop()
    err = capfd.readouterr().err
    assert "Traceback" not in err, err


# -- TLS, reloaded on change -------------------------------------------------------------------
def _self_signed(directory, name: str) -> TLSFiles:
    cert, key = os.path.join(directory, f"{name}.crt"), os.path.join(directory, f"{name}.key")
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            f"/CN={name}",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            key,
            "-out",
            cert,
        ],
        check=True,
        capture_output=True,
    )
    return TLSFiles(cert, key)


def _peer_common_name(address) -> str:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    with socket.create_connection(address, timeout=5) as raw, context.wrap_socket(raw) as tls:
        der = tls.getpeercert(binary_form=True)
    pem = ssl.DER_cert_to_PEM_cert(der)
    out = subprocess.run(
        ["openssl", "x509", "-noout", "-subject"], input=pem, capture_output=True, text=True
    )
    return out.stdout.strip()


@pytest.mark.skipif(
    shutil.which("openssl") is None, reason="needs the openssl command to make certificates"
)
def test_tls_serves_the_certificate_from_files_and_reloads_it_when_they_change(serve, tmp_path):
    first = _self_signed(tmp_path, "first")
    files = TLSFiles(str(tmp_path / "tls.crt"), str(tmp_path / "tls.key"))
    shutil.copy(first.cert_file, files.cert_file)
    shutil.copy(first.key_file, files.key_file)
    server = serve(tls=files)
    assert "CN" in _peer_common_name(server.address) and "first" in _peer_common_name(
        server.address
    )
    second = _self_signed(tmp_path, "second")
    shutil.copy(second.key_file, files.key_file)
    shutil.copy(second.cert_file, files.cert_file)
    os.utime(files.cert_file, ns=(time.time_ns(), time.time_ns() + 1_000_000_000))
    assert "second" in _peer_common_name(server.address)
    # plain HTTP to the TLS port fails that connection only
    with pytest.raises((ConnectionError, http.client.HTTPException, OSError)):
        _get(server.address)
    assert "second" in _peer_common_name(server.address)


# -- the API-server guard ----------------------------------------------------------------------------
class _Reviews:
    """Stands in for the API server's TokenReview and SubjectAccessReview endpoints."""

    def __init__(self, users, allowed):
        self.users, self.allowed, self.calls = users, allowed, []

    def create(self, body):
        self.calls.append(body)
        if body["kind"] == "TokenReview":
            user = self.users.get(body["spec"]["token"])
            return {
                "status": {"authenticated": True, "user": user}
                if user
                else {"authenticated": False}
            }
        spec = body["spec"]
        return {
            "status": {
                "allowed": (
                    spec["user"],
                    spec["nonResourceAttributes"]["path"],
                    spec["nonResourceAttributes"]["verb"],
                )
                in self.allowed
            }
        }


def test_the_guard_answers_401_403_or_lets_through_as_the_api_server_decides(serve):
    reviews = _Reviews(
        users={
            "good": {
                "username": "system:serviceaccount:mon:prometheus",
                "groups": ["system:serviceaccounts"],
            },
            "nosy": {"username": "system:serviceaccount:default:nosy"},
        },
        allowed={("system:serviceaccount:mon:prometheus", "/metrics", "get")},
    )
    clock = [0.0]
    server = serve(guard=ApiServerAuth(reviews, reviews, cache_ttl=10, clock=lambda: clock[0]))
    address = server.address
    assert _get(address, "/metrics")[0] == 401
    assert _get(address, "/metrics", {"Authorization": "Basic Zm9vOmJhcg=="})[0] == 401
    assert _get(address, "/metrics", {"Authorization": "Bearer wrong"})[0] == 401
    assert _get(address, "/metrics", {"Authorization": "Bearer nosy"})[0] == 403
    assert _get(address, "/metrics", {"Authorization": "bearer good"}) == (200, b"up 1\n")
    sar = [c for c in reviews.calls if c["kind"] == "SubjectAccessReview"][-1]["spec"]
    assert sar["nonResourceAttributes"] == {"path": "/metrics", "verb": "get"}
    assert sar["groups"] == ["system:serviceaccounts"]
    calls = len(reviews.calls)
    assert _get(address, "/metrics", {"Authorization": "Bearer good"})[0] == 200
    assert len(reviews.calls) == calls, "a cached decision was reviewed again"
    clock[0] = 11.0
    reviews.allowed.clear()  # access revoked: seen once the cache entry expires
    assert _get(address, "/metrics", {"Authorization": "Bearer good"})[0] == 403


def test_the_guard_fails_closed_with_500_when_it_cannot_ask(serve, caplog):
    from pyinformers.api._errors import Forbidden

    class Refusing:
        def create(self, body):
            raise Forbidden("tokenreviews.authentication.k8s.io is forbidden", code=403)

    server = serve(guard=ApiServerAuth(Refusing(), Refusing()))
    assert _get(server.address, "/metrics", {"Authorization": "Bearer x"})[0] == 500
    assert "needs 'create' on tokenreviews" in caplog.text


def test_bearer_token_parsing():
    assert bearer_token({"Authorization": "Bearer abc"}) == "abc"
    assert bearer_token({"Authorization": "BEARER  abc "}) == "abc"
    assert bearer_token({"Authorization": "Bearer "}) is None
    assert bearer_token({"Authorization": "Basic abc"}) is None
    assert bearer_token({}) is None
