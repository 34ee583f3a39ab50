"""Watch streams of the embedded API server: one chunked HTTP response per watch.

Owns a watch from its start to its end: opening the watcher on the REST
layer, the chunked response (``Transfer-Encoding: chunked``, one JSON event
per line, up to ``_CHUNK_LINES`` lines per chunk when events arrive faster
than they are written), the initial events and their end marker, bookmarks
(every ``bookmark_interval``, the first about 2 s before ``timeoutSeconds``),
the liveness check of an idle client, and the watch faults (stalled and
dropped watches).

Invariants: a watch ends cleanly (final empty chunk) at ``timeoutSeconds`` or
when its watcher is closed for overflow, restart or the removal of its
resource; otherwise it is cut (:class:`Cut`, like a broken connection): when
dropped by a fault, when the server stops, or when the client went away.
Once the stream has started no error response can follow, only a cut; its
watcher is always closed on the way out. A watch is logged before its first
byte is sent.

Thread-safety: each stream is served by its connection's thread; what it
shares (the dispatcher's counters and log, the watch hub) is thread-safe.
"""

from __future__ import annotations

import select
import socket
import ssl
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any

import orjson

from pyinformers.testing.apiserver._http_messages import JSON
from pyinformers.testing.apiserver._http_routing import Route
from pyinformers.testing.apiserver._negotiation import FULL, Form, partial_object
from pyinformers.testing.apiserver._options import for_one_object, parse_watch_options
from pyinformers.testing.apiserver._status import StatusError
from pyinformers.testing.apiserver._watch import Watcher

if TYPE_CHECKING:
    from pyinformers.testing.apiserver._httpd import Dispatcher

__all__ = ["Cut", "serve_watch"]

_LIVENESS_CHECK = 0.25  # how often an idle watch checks that its client is still there
_CHUNK_LINES = 256  # most event lines per chunk
_BOOKMARK_BEFORE_TIMEOUT = (
    2.0  # the real server's first bookmark comes about 2 s before timeoutSeconds
)
_CLEAN_ENDS = (
    "overflow",
    "restart",
    "removed",
)  # watcher close reasons that end the stream properly


class Cut(Exception):
    """The connection must be cut without a proper end (fault, stop, or the client went away)."""


def serve_watch(
    d: Dispatcher,
    h: BaseHTTPRequestHandler,
    route: Route,
    query: dict,
    method: str,
    path: str,
    form: Form = FULL,
) -> None:
    """Answer a watch request with its stream, until the watch ends (or raise :class:`Cut`)."""
    options = parse_watch_options(query, legacy_path=route.watch_prefix)
    if route.name is not None:  # /watch/.../{name}: that one object
        options = for_one_object(options, route.name)
    rt = route.resource
    try:
        watcher, initial, start_rv, initial_end = d.rest.open_watch(
            rt, route.namespace, options, max_queue=d.max_watch_queue
        )
    except StatusError as exc:
        if exc.code not in (410, 504):
            raise
        # The real server answers an expired resourceVersion, and a streaming list from one it
        # has not reached (after waiting about 3 s for it; here at once), with 200 and an ERROR event.
        d.record(method, path, query, 200, "watch")  # before the client can have the answer
        _start_stream(h)
        _chunk(h, b'{"type":"ERROR","object":' + orjson.dumps(exc.status) + b"}\n")
        _end_stream(h)
        return
    if form.kind in ("PartialObjectMetadata", "PartialObjectMetadataList"):
        # Each event's object as PartialObjectMetadata (bookmarks too), as the real server sends them.
        item_form = Form("PartialObjectMetadata", form.version)
        watcher.transform = lambda obj: partial_object(obj, item_form)
    d.count("watches")
    try:
        d.record(method, path, query, 200, "watch")  # before the client can have the answer
        _start_stream(h)
        _serve_events(d, h, watcher, options, initial, start_rv, initial_end)
    except (Cut, OSError):
        raise Cut() from None
    except Exception:  # the stream has started: no error response can follow, only a cut
        d.count("watches:failed")
        raise Cut() from None
    finally:
        d.hub.close(watcher)


def _start_stream(h: BaseHTTPRequestHandler) -> None:
    h.send_response(200)
    h.send_header("Content-Type", JSON)
    h.send_header("Transfer-Encoding", "chunked")
    h.send_header("Cache-Control", "no-cache, private")
    h.end_headers()


def _chunk(h: BaseHTTPRequestHandler, data: bytes) -> None:
    if data:
        h.wfile.write(b"%x\r\n%b\r\n" % (len(data), data))


def _chunks(h: BaseHTTPRequestHandler, lines: list[bytes]) -> None:
    """Write lines as chunks of at most ``_CHUNK_LINES`` lines, each built with one copy."""
    for i in range(0, len(lines), _CHUNK_LINES):
        part = lines[i : i + _CHUNK_LINES]
        size = sum(map(len, part))
        h.wfile.write(b"".join([b"%x\r\n" % size, *part, b"\r\n"]))


def _end_stream(h: BaseHTTPRequestHandler) -> None:
    h.wfile.write(b"0\r\n\r\n")


def _client_gone(h: BaseHTTPRequestHandler) -> bool:
    sock = h.connection
    try:
        readable, _, _ = select.select([sock], [], [], 0)
        if not readable:
            return False
        if isinstance(sock, ssl.SSLSocket):
            return False  # no peeking through TLS: a gone client shows when a write fails
        return sock.recv(1, socket.MSG_PEEK) == b""
    except (OSError, ValueError):
        return True


def _serve_events(
    d: Dispatcher,
    h: BaseHTTPRequestHandler,
    watcher: Watcher,
    options: Any,
    initial: list[dict],
    start_rv: int,
    initial_end: bool,
) -> None:
    faults, clock = d.faults, d.clock
    now = clock.now()
    deadline = now + options.timeout_seconds if options.timeout_seconds else None
    next_bookmark = now + d.bookmark_interval if options.allow_bookmarks else None
    if next_bookmark is not None and deadline is not None:
        next_bookmark = min(next_bookmark, deadline - _BOOKMARK_BEFORE_TIMEOUT)
    next_liveness = now + _LIVENESS_CHECK
    sent = 0
    # Stalled before the first byte: keep the connection open, send nothing.
    _stall(d, h, watcher)
    for i in range(0, len(initial), _CHUNK_LINES):
        lines = watcher.encode_objects(initial[i : i + _CHUNK_LINES])
        sent += len(lines)
        _chunks(h, lines)
    if initial_end:
        _chunk(h, watcher.bookmark_line(start_rv, initial_events_end=True))
    while True:
        if faults.stall_watches:
            _stall(d, h, watcher)
            continue
        now = clock.now()
        wait = next_liveness - now
        if deadline is not None:
            wait = min(wait, deadline - now)
        if next_bookmark is not None:
            wait = min(wait, next_bookmark - now)
        batch = watcher.next_batch(max(wait, 0.0), clock)
        if batch is None:
            reason = watcher.close_reason
            if reason in _CLEAN_ENDS:
                d.count("watches:overflowed" if reason == "overflow" else f"watches:{reason}")
                break
            d.count(f"watches:{reason}")
            raise Cut()
        if batch:
            lines = watcher.encode(batch)
            if lines:
                _chunks(h, lines)
                sent += len(lines)
                if faults.roll(faults.drop_watch_probability):
                    d.count("watches:dropped")
                    raise Cut()
        now = clock.now()
        if next_bookmark is not None and now >= next_bookmark:
            rv = d.hub.bookmark_rv(watcher)
            if rv is not None:
                _chunk(h, watcher.bookmark_line(rv))
            next_bookmark = now + d.bookmark_interval
        if deadline is not None and now >= deadline:
            break
        if now >= next_liveness:
            if _client_gone(h):
                raise Cut()
            next_liveness = now + _LIVENESS_CHECK
    d.count("watch_events_sent", sent)
    _end_stream(h)


def _stall(d: Dispatcher, h: BaseHTTPRequestHandler, watcher: Watcher) -> None:
    """While watches are stalled: send nothing, but notice stop, drops and a vanished client.

    The ``watches_stalled`` counter holds how many watches are parked here right now, so a
    test can wait until a stall has taken hold instead of guessing (an idle watch notices
    the fault at its next wake-up, up to ``_LIVENESS_CHECK`` later).
    """
    if not d.faults.stall_watches:
        return
    d.count("watches_stalled")
    try:
        while d.faults.stall_watches:
            if watcher.closed and watcher.close_reason != "overflow":
                raise Cut()
            if d.stopping.wait(_LIVENESS_CHECK) or _client_gone(h):
                raise Cut()
    finally:
        d.count("watches_stalled", -1)
