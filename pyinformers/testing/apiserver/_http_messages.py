"""HTTP message bodies of the embedded API server: request bodies in, whole responses out.

Owns the framing of one exchange on a ``BaseHTTPRequestHandler``: reading a
request body (``Content-Length`` or chunked, capped at ``max_body``: 413
beyond it, 400 when the framing is malformed) and writing a complete JSON or
text response (``Content-Length`` always set, ``Connection: close`` when the
connection is to be closed, ``Warning`` headers for admission warnings).
Watch streams (chunked responses) are :mod:`._http_watch`'s.

Invariant: a request whose body is refused or malformed leaves its
connection marked to be closed, since the unread rest of the body would be
taken for the next request.

Thread-safety: free functions; each works on one connection, which belongs
to one thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

import orjson

from pyinformers.testing.apiserver._status import StatusError, bad_request

__all__ = [
    "JSON",
    "MAX_REQUEST_BODY",
    "Text",
    "announces_body",
    "read_body",
    "send_document",
    "send_json",
    "send_text",
]

JSON = "application/json"
#: the real server's limit on request bodies (3 MiB)
MAX_REQUEST_BODY = 3 * 1024 * 1024
_MAX_TRAILERS = 100
_DISCARD_SLACK = 1024 * 1024  # how far past the body limit a refused body is still read
_DISCARD_PAUSE = 0.2  # ... as long as the client does not pause longer than this


@dataclass(frozen=True)
class Text:
    """A non-resource answer sent as text with its own Content-Type."""

    text: str
    content_type: str


def _too_large(limit: int) -> StatusError:
    return StatusError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}")


def announces_body(h: BaseHTTPRequestHandler) -> bool:
    """Whether the request's headers say a body follows."""
    length = h.headers.get("Content-Length")
    return h.headers.get("Transfer-Encoding", "").lower() == "chunked" or (
        length is not None and length.strip() not in ("", "0")
    )


def read_body(h: BaseHTTPRequestHandler, limit: int) -> bytes:
    """The request body, at most ``limit`` bytes (413 beyond, 400 when malformed).

    A request whose body is refused leaves its connection to be closed:
    the rest of the body is never read.
    """
    if h.headers.get("Transfer-Encoding", "").lower() == "chunked":
        parts: list[bytes] = []
        total = 0
        while True:
            size_line = h.rfile.readline(1025)
            try:
                size = int(size_line.split(b";")[0].strip(), 16)
                if size < 0:
                    raise ValueError(size)
            except ValueError:
                h.close_connection = True
                raise bad_request("malformed chunked request body: bad chunk size") from None
            if size == 0:
                for _ in range(_MAX_TRAILERS):
                    if h.rfile.readline(65537) in (b"\r\n", b"\n", b""):
                        break
                return b"".join(parts)
            total += size
            if total > limit:
                h.close_connection = True
                raise _too_large(limit)
            chunk = h.rfile.read(size)
            if len(chunk) < size:
                h.close_connection = True
                raise bad_request("malformed chunked request body: truncated chunk")
            parts.append(chunk)
            h.rfile.readline(65537)
    length = h.headers.get("Content-Length")
    if length is None or not length.strip():
        return b""
    try:
        n = int(length.strip())
        if n < 0 or not length.strip().isdigit():
            raise ValueError(n)
    except ValueError:
        h.close_connection = True
        raise bad_request(f"invalid Content-Length {length[:40]!r}") from None
    if n > limit:
        # Read (and drop) a little past the limit so that a client that sends its whole
        # body before reading gets the 413 rather than a broken pipe; then close.
        h.close_connection = True
        _discard(h, min(n, limit + _DISCARD_SLACK))
        raise _too_large(limit)
    body = h.rfile.read(n)
    if len(body) < n:
        h.close_connection = True
        raise bad_request("the request body ended before its Content-Length")
    return body


def _discard(h: BaseHTTPRequestHandler, amount: int) -> None:
    """Read and drop up to ``amount`` bytes of a refused body, while the client keeps sending."""
    sock = h.connection
    previous = sock.gettimeout()
    sock.settimeout(_DISCARD_PAUSE)
    try:
        while amount > 0:
            chunk = h.rfile.read1(min(amount, 65536))
            if not chunk:
                return
            amount -= len(chunk)
    except OSError:
        return  # the client paused or went away: answer now
    finally:
        try:
            sock.settimeout(previous)
        except OSError:
            pass


def send_document(h: BaseHTTPRequestHandler, document: Any) -> None:
    """A non-resource answer: plain text for the health endpoints, JSON otherwise."""
    if isinstance(document, Text):
        send_text(h, 200, document.text, document.content_type)
    elif isinstance(document, str):
        send_text(h, 200, document)
    else:
        send_json(h, 200, document)


def send_text(
    h: BaseHTTPRequestHandler,
    code: int,
    text: str,
    content_type: str = "text/plain; charset=utf-8",
) -> None:
    body = text.encode()
    h.send_response(code)
    h.send_header("Content-Type", content_type)
    h.send_header("X-Content-Type-Options", "nosniff")
    h.send_header("Content-Length", str(len(body)))
    if h.close_connection:
        h.send_header("Connection", "close")
    h.end_headers()
    h.wfile.write(body)


def send_json(
    h: BaseHTTPRequestHandler,
    code: int,
    document: Any,
    *,
    headers: dict | None = None,
    warnings: list | None = None,
    content_type: str = JSON,
) -> None:
    body = orjson.dumps(document)
    h.send_response(code)
    h.send_header("Content-Type", content_type)
    h.send_header("Content-Length", str(len(body)))
    if h.close_connection:
        h.send_header("Connection", "close")
    for key, value in (headers or {}).items():
        h.send_header(key, value)
    for warning in warnings or ():
        h.send_header(
            "Warning", '299 - "' + warning.replace("\\", "\\\\").replace('"', '\\"') + '"'
        )
    h.end_headers()
    h.wfile.write(body)
