"""Watch events and the stream that reads them: :class:`WatchEvent`, :class:`WatchStream`.

:meth:`~pyinformers.api._client.ResourceClient.watch` returns a
:class:`WatchStream`: an iterator of :class:`WatchEvent` read from the chunked
response line by line. Each line is decoded exactly once (no re-encoding); an
``ERROR`` event raises the typed :class:`~pyinformers.api._errors.ApiError`.
:meth:`WatchStream.close` may be called from any thread: it shuts the socket
down for reading (``urllib3.HTTPResponse.shutdown()``, public since urllib3
2.3; for older urllib3 the socket of ``HTTPResponse.connection``), which makes
a reader blocked in ``recv`` return at once; the reader then ends its
iteration quietly and the connection is closed and handed back to the pool.

Thread-safety: a :class:`WatchStream` is iterated by one thread; ``close()``
is safe from any.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from pyinformers.api._chunked import fast_chunked_reader, read_chunked_body
from pyinformers.api._errors import ApiError, error_from_status
from pyinformers.api._resource import Resource
from pyinformers.api._transport import release, shutdown_reader

__all__ = ["WatchEvent", "WatchEventType", "WatchStream"]

_READ_SIZE = 64 * 1024
# First bytes of a line that may be blank (whitespace only): such lines are skipped.
_BLANK = frozenset(b" \t\r\n\x0b\x0c")


class WatchEventType:
    """The ``type`` strings of watch events (plain ``str`` constants: events are compared often)."""

    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"
    BOOKMARK = "BOOKMARK"
    ERROR = "ERROR"


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """One watch event: ``type`` is ADDED, MODIFIED, DELETED or BOOKMARK; ``object`` the decoded object.

    The object is the server's, shared with whoever keeps it: do not mutate it.
    """

    type: str
    object: dict

    def __repr__(self) -> str:
        md = self.object.get("metadata") or {}
        return f"WatchEvent({self.type}, {md.get('namespace') or ''}/{md.get('name') or ''} rv={md.get('resourceVersion')})"


class WatchStream:
    """An iterator of :class:`WatchEvent` over one open watch response.

    Invariants: each line of the body is decoded exactly once; iteration ends
    (StopIteration) when the server closes the stream or :meth:`close` was
    called; an ``ERROR`` event raises its typed ApiError (and ends the stream);
    a broken connection raises the urllib3/OSError exception, unless the stream
    was closed, in which case iteration just ends.

    One thread iterates; :meth:`close` may be called from any thread, any
    number of times, before, during or after iteration.
    """

    def __init__(
        self,
        response: Any,
        resource: Resource[Any] | None = None,
        *,
        expect_kind: str | None = None,
        not_served: Callable[[str], Exception] | None = None,
    ) -> None:
        self._response = response
        self._resource = resource
        # A metadata-only watch: every object event must carry this kind, else not_served(answer) is raised.
        self._expect_kind = expect_kind
        self._not_served = not_served
        self._lock = threading.Lock()
        self._closed = False  # set once by close(); read by the iterating thread
        self._reading = False  # True while a thread is inside __iter__'s generator
        self._released = False  # the connection went back to the pool (exactly once)
        self._events = 0
        self._iterator: Iterator[WatchEvent] | None = None

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called or the stream ended."""
        return self._closed

    @property
    def events(self) -> int:
        """How many events this stream has produced so far."""
        return self._events

    def close(self) -> None:
        """Stop the stream. Safe from any thread; a blocked reader returns promptly."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            reading = self._reading
        shutdown_reader(self._response)
        if not reading:
            self._release()

    def _release(self) -> None:
        with self._lock:
            if self._released:
                return
            self._released = True
        release(self._response, reusable=False)

    def __iter__(self) -> Iterator[WatchEvent]:
        if self._iterator is None:
            self._iterator = self._generate()
        return self._iterator

    def __next__(self) -> WatchEvent:
        return next(iter(self))

    def __enter__(self) -> WatchStream:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _chunks(self) -> Iterator[bytes]:
        response = self._response
        read1 = fast_chunked_reader(response)
        if read1 is not None:  # large reads, our own framing: one recv per socket-full of events
            yield from read_chunked_body(response, read1)
            return
        if getattr(response, "chunked", False) and response.supports_chunked_reads():
            # One HTTP chunk per iteration, as soon as it is complete.
            yield from response.read_chunked(None, decode_content=True)
            return
        read_some = getattr(response, "read1", None)
        while True:  # not chunked (a proxy re-framed it, or HTTP/1.0): read what is there
            data = read_some(_READ_SIZE) if read_some is not None else response.read(_READ_SIZE)
            if not data:
                return
            yield data

    def _generate(self) -> Iterator[WatchEvent]:
        with self._lock:
            if self._closed:
                return  # closed before the first read: close() already released the connection
            self._reading = True
        clean = False
        loads = orjson.loads
        kind = self._resource.kind if self._resource is not None else None
        expect = self._expect_kind
        api_version = self._resource.api_version if self._resource is not None else None
        try:
            pending = b""
            for chunk in self._chunks():
                if self._closed:
                    return
                end = chunk.find(b"\n")
                if end < 0:
                    pending += chunk
                    continue
                if pending:
                    chunk = pending + chunk
                    end = chunk.find(b"\n", len(pending))
                # Lines are found with find() (memchr) and decoded from a memoryview of the
                # chunk: no split() scan and no copy of each line.
                view = memoryview(chunk)
                find = chunk.find
                start = 0
                while end >= 0:
                    if end > start and not (chunk[start] in _BLANK and chunk[start:end].isspace()):
                        raw = loads(view[start:end])
                        etype = raw["type"]
                        obj = raw["object"]
                        if etype == WatchEventType.ERROR:
                            code = obj.get("code", 0) if isinstance(obj, dict) else 0
                            raise error_from_status(
                                obj if isinstance(obj, dict) else None, code or 0
                            )
                        if expect is not None and obj.get("kind") != expect and etype != "BOOKMARK":
                            raise self._wrong_kind(obj)
                        if kind is not None and "kind" not in obj:
                            obj["kind"] = kind
                            obj["apiVersion"] = api_version
                        self._events += 1
                        yield WatchEvent(etype, obj)
                        if self._closed:
                            return
                    start = end + 1
                    end = find(b"\n", start)
                pending = chunk[start:]
                del view
            if pending.strip() and not self._closed:
                raise ValueError(
                    f"watch stream ended inside an event ({len(pending)} bytes unterminated)"
                )
            clean = not self._closed
        except ApiError:
            raise
        except Exception:
            if self._closed:
                return  # close() broke the read on purpose: not an error
            raise
        finally:
            with self._lock:
                self._reading = False
                self._closed = True
                already = self._released
                self._released = True
            if not already:
                release(self._response, reusable=clean)

    def _wrong_kind(self, obj: Any) -> Exception:
        answer = (
            f"sent a {obj.get('kind')!r} event"
            if isinstance(obj, dict)
            else "sent an event without an object"
        )
        if self._not_served is not None:
            return self._not_served(answer)
        return ValueError(f"watch: expected {self._expect_kind} objects, the server {answer}")

    def __repr__(self) -> str:
        state = "closed" if self._closed else ("reading" if self._reading else "open")
        return f"<WatchStream {self._resource or ''} {state} events={self._events}>"
