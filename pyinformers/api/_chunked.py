"""Reading a chunked HTTP body in large reads: :func:`fast_chunked_reader`, :func:`read_chunked_body`.

urllib3's ``read_chunked`` reads each HTTP chunk with its own buffered reads:
a ``readline`` for the size, a read for the payload, a read for its CRLF. The
socket behind it is read through ``http.client``'s 8 KiB buffer, so a watch
costs about one ``recv`` per event when the API server writes one event per
chunk, as kube-apiserver does. Every ``recv`` releases the GIL, and with
several watches in one process (one reflector thread each) every release is a
hand-off between threads: futex calls, context switches and cold caches.

:func:`read_chunked_body` reads up to :data:`READ_SIZE` bytes per ``recv``
(whatever the socket holds, blocking only when it holds nothing) and strips the
chunk framing itself, so a busy watch costs one ``recv`` per socket-full of
events. Over TLS one read returns at most one TLS record, and kube-apiserver
writes each watch event as a record of its own, so on a TLS socket the reader
goes on reading while more records are already there. It yields the payload
as it arrives: whole or partial chunks, several chunks joined, never anything
of the framing. After the last chunk (size 0) and the trailer it closes
``http.client``'s response object, as urllib3 does, so the connection is clean
for reuse.

Invariants: the bytes yielded, concatenated, are exactly the body's payload;
a body that ends before its last chunk raises ``urllib3.exceptions.ProtocolError``
(a watch cut mid-stream is a failure, never a quiet end); a read timeout raises
``urllib3.exceptions.ReadTimeoutError``, as urllib3's own reads do.

Thread-safety: one thread reads; shutting the socket down from another thread
(:func:`pyinformers.api._transport.shutdown_reader`) makes a blocked read return.
"""

from __future__ import annotations

import select
import ssl
from collections.abc import Callable, Iterator
from typing import Any

from urllib3.exceptions import ProtocolError, ReadTimeoutError

__all__ = ["READ_SIZE", "fast_chunked_reader", "read_chunked_body"]

READ_SIZE = 256 * 1024
_MAX_LINE = 64 * 1024  # a chunk-size or trailer line longer than this is not HTTP


def fast_chunked_reader(response: Any) -> Callable[[int], bytes] | None:
    """The ``read1`` of the buffered socket file under a urllib3 ``response``, when its body can be
    read with :func:`read_chunked_body`; None otherwise (not chunked, content-encoded, already
    partly read, or a response object of another shape): the caller falls back to urllib3."""
    if not getattr(response, "chunked", False) or getattr(response, "chunk_left", None) is not None:
        return None
    headers = getattr(response, "headers", None)
    encoding = headers.get("content-encoding", "") if headers is not None else ""
    if encoding and encoding.strip().lower() != "identity":
        return None
    original = getattr(response, "_fp", None)
    fp = getattr(original, "fp", None)
    read1 = getattr(fp, "read1", None)
    if read1 is None or original is not getattr(response, "_original_response", None):
        return None
    sock = getattr(getattr(fp, "raw", None), "_sock", None)
    if isinstance(sock, ssl.SSLSocket):
        return _coalescing_records(read1, sock)
    return read1


def _coalescing_records(
    read1: Callable[[int], bytes], sock: ssl.SSLSocket
) -> Callable[[int], bytes]:
    """A ``read1`` over TLS that goes on reading while the socket already holds more records.

    A TLS read returns at most one record, and kube-apiserver writes a watch
    event per record, so a plain ``read1`` hands the watch one event per
    read: the consumer is woken, and the GIL changes hands, once per event
    (measured: about 4 context switches per event on a busy watch, against
    0.15 with this). After each record this reads the next one as long as
    the socket holds one already (a zero-timeout poll, which never waits)
    and ``size`` is not reached, so a busy watch is handed socket-fulls, as
    over plain HTTP. An idle watch pays one poll per read.

    Nothing read is lost to an error: a failure after the first record ends
    the call with what was read, and the next call meets the failure again.
    """
    ready: Callable[[], bool]
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(sock.fileno(), select.POLLIN)

        def ready() -> bool:
            return bool(poller.poll(0))
    else:  # pragma: no cover - no poll() on this platform
        fileno = sock.fileno()

        def ready() -> bool:
            return bool(select.select((fileno,), (), (), 0)[0])

    def read_records(size: int) -> bytes:
        first = read1(size)
        have = len(first)
        if not have or have >= size:
            return first
        pieces = [first]
        try:
            while have < size and (sock.pending() or ready()):
                more = read1(size - have)
                if not more:
                    break
                pieces.append(more)
                have += len(more)
        except (OSError, ValueError):  # a timeout, a reset, a socket shut down under us: next call
            pass
        return first if len(pieces) == 1 else b"".join(pieces)

    return read_records


def read_chunked_body(
    response: Any, read1: Callable[[int], bytes], read_size: int = READ_SIZE
) -> Iterator[bytes]:
    """Yield the payload of ``response``'s chunked body, one piece per socket read (see the module)."""
    data = b""
    pos = 0
    left = 0  # payload bytes of the current chunk still to come
    crlf = 0  # bytes of the CRLF after the current chunk's payload still to skip
    while True:
        # -- frame what is buffered ------------------------------------------------------------
        pieces: list[Any] = []  # memoryviews of data: joined with one copy
        size = len(data)
        view = memoryview(data)
        while pos < size:
            if left:
                take = min(left, size - pos)
                pieces.append(view[pos : pos + take])
                pos += take
                left -= take
                if not left:
                    crlf = 2
                continue
            if crlf:
                skip = min(crlf, size - pos)
                if data[pos : pos + skip] != b"\r\n"[2 - crlf : 2 - crlf + skip]:
                    raise ProtocolError(
                        f"chunked body: no CRLF after a chunk (got {data[pos : pos + skip]!r})"
                    )
                pos += skip
                crlf -= skip
                continue
            eol = data.find(b"\n", pos)
            if eol < 0:
                if size - pos > _MAX_LINE:
                    raise ProtocolError("chunked body: chunk-size line too long")
                break  # the size line is not complete yet
            line = data[pos:eol].split(b";", 1)[0].strip()
            try:
                length = int(line, 16)
            except ValueError:
                raise ProtocolError(f"chunked body: bad chunk-size line {line[:40]!r}") from None
            if length < 0:
                raise ProtocolError(f"chunked body: bad chunk-size line {line[:40]!r}")
            pos = eol + 1
            if length == 0:
                if pieces:
                    yield _joined(pieces, data)
                _finish(response, read1, data[pos:])
                return
            left = length
        if pieces:
            yield _joined(pieces, data)
        del view, pieces
        # -- read more ---------------------------------------------------------------------------
        rest = data[pos:] if pos < size else b""
        chunk = _read(read1, read_size)
        if not chunk:
            raise ProtocolError(
                "Response ended prematurely: the connection closed inside a chunked body"
            )
        data = rest + chunk if rest else chunk
        pos = 0


def _joined(pieces: list[memoryview], data: bytes) -> bytes:
    if len(pieces) == 1:
        piece = pieces[0]
        return data if len(piece) == len(data) else piece.tobytes()
    return b"".join(pieces)


def _read(read1: Callable[[int], bytes], size: int) -> bytes:
    try:
        return read1(size)
    except TimeoutError as error:  # TimeoutError on 3.10+
        raise ReadTimeoutError(None, None, f"Read timed out. ({error})") from error  # type: ignore[arg-type]


def _finish(response: Any, read1: Callable[[int], bytes], rest: bytes) -> None:
    """Skip the trailer section after the last chunk, then mark the response read (reusable)."""
    while True:
        eol = rest.find(b"\n")
        if eol < 0:
            if len(rest) > _MAX_LINE:
                raise ProtocolError("chunked body: trailer line too long")
            more = _read(read1, 1024)
            if not more:
                break  # some servers end without the final CRLF
            rest += more
            continue
        line, rest = rest[:eol], rest[eol + 1 :]
        if not line.strip():
            break
    original = getattr(response, "_original_response", None)
    if original is not None:
        original.close()
