"""The embedded API server holds up against hostile and broken clients, as a real one does.

Each test speaks raw HTTP over a socket, so that it can send what no client
library would: literal dot segments, lying Content-Lengths, bad chunk sizes,
half a request. Every answer must come promptly (a socket timeout fails the
test instead of hanging it), and be a 4xx ``Status``, never a 500.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import time

import orjson
import pytest

from pyinformers.testing import ApiServer

TOKEN = "hardening-token"


@pytest.fixture
def server():
    with ApiServer(token=TOKEN, idle_timeout=1.0) as s:
        yield s


def exchange(server: ApiServer, request: bytes, *, timeout: float = 5.0) -> tuple[int, dict, bytes]:
    """Send raw bytes; return (status, headers, body) of the first answer. The connection is closed after."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=timeout) as sock:
        try:
            sock.sendall(request)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server may refuse before the whole request is sent; its answer is still there
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.decode("iso-8859-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {
            k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])
        }
        length = int(headers.get("content-length", "0"))
        while len(body) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            body += chunk
        return status, headers, body


def request(
    method: str, path: str, *, headers: dict | None = None, body: bytes = b"", auth: bool = True
) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: test"]
    if auth:
        lines.append(f"Authorization: Bearer {TOKEN}")
    for key, value in (headers or {}).items():
        lines.append(f"{key}: {value}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def status_of(body: bytes) -> dict:
    return orjson.loads(body)


# -- names cannot escape their path -------------------------------------------------------------


@pytest.mark.parametrize("name", [".", ".."])
def test_dot_names_are_rejected_like_a_real_server(server, name):
    code, _, body = exchange(
        server, request("GET", f"/api/v1/namespaces/default/configmaps/{name}")
    )
    assert code == 400
    assert status_of(body)["message"] == f"Name parameter invalid: \"{name}\": may not be '{name}'"


def test_a_dot_dot_name_does_not_delete_the_namespace(server):
    code, _, _ = exchange(server, request("DELETE", "/api/v1/namespaces/default/configmaps/.."))
    assert code == 400
    code, _, body = exchange(server, request("GET", "/api/v1/namespaces/default"))
    assert code == 200 and "deletionTimestamp" not in status_of(body)["metadata"]


def test_a_dot_dot_namespace_is_rejected(server):
    code, _, body = exchange(server, request("GET", "/api/v1/namespaces/../configmaps"))
    assert code == 400 and status_of(body)["reason"] == "BadRequest"


def test_an_encoded_slash_names_no_object(server):
    code, _, body = exchange(server, request("GET", "/api/v1/namespaces/default/configmaps/a%2Fb"))
    assert code == 404
    assert status_of(body)["message"] == "the server could not find the requested resource"


# -- authentication comes before the body ------------------------------------------------------------


def test_an_unauthenticated_request_is_answered_without_reading_its_body(server):
    # 10 MB announced, none sent: a server that reads the body first waits for it.
    headers = {"Content-Type": "application/json", "Content-Length": "10000000"}
    start = time.monotonic()
    code, _, body = exchange(
        server,
        request("POST", "/api/v1/namespaces/default/configmaps", headers=headers, auth=False),
    )
    assert code == 403 and status_of(body)["reason"] == "Forbidden"
    assert time.monotonic() - start < 0.9  # before the idle timeout could have ended the wait
    wrong = request(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        headers={**headers, "Authorization": "Bearer nope"},
        auth=False,
    )
    code, _, _ = exchange(server, wrong)
    assert code == 401


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER", "bEaReR"])
def test_the_bearer_scheme_is_case_insensitive(server, scheme):
    code, _, _ = exchange(
        server,
        request(
            "GET", "/api/v1/namespaces", headers={"Authorization": f"{scheme} {TOKEN}"}, auth=False
        ),
    )
    assert code == 200


# -- bodies: capped, and malformed framing is a 400 ---------------------------------------------------


def test_a_body_over_three_mebibytes_is_413(server):
    blob = orjson.dumps({"metadata": {"name": "big"}, "data": {"x": "x" * (3 * 1024 * 1024)}})
    headers = {"Content-Type": "application/json", "Content-Length": str(len(blob))}
    code, _, body = exchange(
        server, request("POST", "/api/v1/namespaces/default/configmaps", headers=headers, body=blob)
    )
    assert code == 413
    assert status_of(body)["message"] == "Request entity too large: limit is 3145728"
    assert not server.objects("configmaps", namespace="default")


@pytest.mark.parametrize("length", [str(10**18), str(4 * 1024 * 1024)])
def test_a_huge_content_length_is_413_at_once(server, length):
    headers = {"Content-Type": "application/json", "Content-Length": length}
    code, headers_out, _ = exchange(
        server, request("POST", "/api/v1/namespaces/default/configmaps", headers=headers)
    )
    assert code == 413 and headers_out.get("connection", "").lower() == "close"


@pytest.mark.parametrize("length", ["-1", "abc", "1e3", " 12x"])
def test_a_malformed_content_length_is_400(server, length):
    headers = {"Content-Type": "application/json", "Content-Length": length}
    code, _, body = exchange(
        server, request("POST", "/api/v1/namespaces/default/configmaps", headers=headers)
    )
    assert code == 400 and status_of(body)["reason"] == "BadRequest"


@pytest.mark.parametrize(
    "chunked", [b"zz\r\n{}\r\n0\r\n\r\n", b"-5\r\nabcde\r\n0\r\n\r\n", b"ffffffffffff\r\nab"]
)
def test_bad_chunk_framing_is_400_or_413(server, chunked):
    headers = {"Content-Type": "application/json", "Transfer-Encoding": "chunked"}
    code, _, body = exchange(
        server,
        request("POST", "/api/v1/namespaces/default/configmaps", headers=headers, body=chunked),
    )
    assert code in (400, 413) and status_of(body)["reason"] in (
        "BadRequest",
        "RequestEntityTooLarge",
    )


def test_a_body_shorter_than_its_content_length_times_out_and_is_closed(server):
    headers = {"Content-Type": "application/json", "Content-Length": "100"}
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(
            request("POST", "/api/v1/namespaces/default/configmaps", headers=headers, body=b"{")
        )
        start = time.monotonic()
        while sock.recv(65536):
            pass  # whatever the server says, it must then close
        assert time.monotonic() - start < 4


# -- half-open connections ------------------------------------------------------------------------


def test_a_half_open_connection_is_closed_after_the_idle_timeout(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        sock.sendall(b"GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\n")  # headers never end
        start = time.monotonic()
        assert sock.recv(65536) == b""
        assert 0.5 < time.monotonic() - start < 4
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as idle:
        assert idle.recv(1) == b""  # a connection that sends nothing at all, too
    assert server.running


def test_hundreds_of_half_open_connections_are_closed_after_the_header_timeout_and_others_served():
    from pyinformers.testing import eventually

    with ApiServer(header_timeout=0.5, idle_timeout=30.0) as s:
        sockets = [socket.create_connection(("127.0.0.1", s.port), timeout=10) for _ in range(300)]
        try:
            # Everyone else is still served while they hang on.
            code, _, _ = exchange(s, request("GET", "/api/v1/namespaces"))
            assert code == 200
            # Each is closed by the server once the header timeout passed, long before the idle one.
            start = time.monotonic()
            for sock in sockets:
                assert sock.recv(1) == b""
            assert time.monotonic() - start < 15
            eventually(lambda: s._httpd.connection_count() == 0, timeout=20)
        finally:
            for sock in sockets:
                sock.close()


def test_an_idle_keep_alive_connection_waits_past_the_header_timeout_for_its_next_request():
    with ApiServer(header_timeout=0.3, idle_timeout=30.0) as s:
        with socket.create_connection(("127.0.0.1", s.port), timeout=10) as sock:
            sock.sendall(request("GET", "/api/v1/namespaces"))
            assert _read_response(sock).startswith(b"HTTP/1.1 200")
            _wait_without_sleeping_on_the_server(sock, 1.0)  # longer than the header timeout
            sock.sendall(request("GET", "/api/v1/namespaces"))
            assert _read_response(sock).startswith(b"HTTP/1.1 200")


def _read_response(sock: socket.socket) -> bytes:
    """One whole response with a Content-Length body, read off a keep-alive connection."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, "the connection closed mid-response"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "the connection closed mid-body"
        body += chunk
    return head + b"\r\n\r\n" + body


def _wait_without_sleeping_on_the_server(sock: socket.socket, seconds: float) -> None:
    """Let ``seconds`` pass on the wall clock while watching the socket: nothing may arrive or close."""
    import select

    readable, _, _ = select.select([sock], [], [], seconds)
    assert not readable, "the server closed (or wrote to) an idle keep-alive connection"


# -- every 500 leaves a traceback in the log ----------------------------------------------------------


def test_an_internal_error_is_a_500_status_and_a_logged_traceback(server, monkeypatch, caplog):
    def broken(*args, **kwargs):
        raise RuntimeError("a bug in the server")

    monkeypatch.setattr(server.rest, "get", broken)
    with caplog.at_level(logging.ERROR, logger="pyinformers.testing.apiserver._httpd"):
        code, _, body = exchange(server, request("GET", "/api/v1/namespaces/default/configmaps/x"))
    assert code == 500 and status_of(body)["reason"] == "InternalError"
    records = [r for r in caplog.records if r.exc_info]
    assert records and "a bug in the server" in str(records[0].exc_info[1])


# -- SIGTERM with many idle connections ---------------------------------------------------------------


def test_sigterm_exits_promptly_with_hundreds_of_idle_connections(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "pyinformers.testing", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    sockets = []
    try:
        line = proc.stdout.readline()
        assert "listening on" in line, line + proc.stderr.read()
        port = int(line.rsplit(":", 1)[1])
        for _ in range(500):
            sockets.append(socket.create_connection(("127.0.0.1", port), timeout=5))
        sockets[-1].sendall(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n")
        assert sockets[-1].recv(12).startswith(b"HTTP/1.1 200")  # the server got to them all
        start = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
        assert time.monotonic() - start < 5
    finally:
        for sock in sockets:
            sock.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
