"""WatchStream line framing and error handling, on a scripted response (no network)."""

from __future__ import annotations

import orjson
import pytest

from pyinformers.api import Gone, ServerError, WatchEvent
from pyinformers.api._watch import WatchStream
from pyinformers.resources import PODS


class ScriptedResponse:
    """Just enough of urllib3's HTTPResponse: chunked reads of given byte strings."""

    chunked = True

    def __init__(self, chunks, *, error: BaseException | None = None) -> None:
        self.chunks = list(chunks)
        self.error = error
        self.shutdowns = 0
        self.closed = False
        self.released = 0

    def supports_chunked_reads(self) -> bool:
        return True

    def read_chunked(self, amt=None, decode_content=True):
        yield from self.chunks
        if self.error is not None:
            raise self.error

    def shutdown(self) -> None:
        self.shutdowns += 1

    def close(self) -> None:
        self.closed = True

    def release_conn(self) -> None:
        self.released += 1


def line(etype: str, name: str, **obj) -> bytes:
    return (
        orjson.dumps(
            {"type": etype, "object": {"metadata": {"name": name, "resourceVersion": "1"}, **obj}}
        )
        + b"\n"
    )


def test_events_split_across_chunks_and_several_per_chunk_are_framed_exactly():
    data = line("ADDED", "a") + line("MODIFIED", "b") + line("DELETED", "c")
    chunks = [data[:7], data[7:40], data[40:41], data[41:]]
    response = ScriptedResponse(chunks)
    events = list(WatchStream(response, PODS))
    assert [(e.type, e.object["metadata"]["name"]) for e in events] == [
        ("ADDED", "a"),
        ("MODIFIED", "b"),
        ("DELETED", "c"),
    ]
    assert all(e.object["kind"] == "Pod" and e.object["apiVersion"] == "v1" for e in events)
    assert response.released == 1 and not response.closed  # a clean end: the connection is reusable


def test_blank_lines_are_skipped_and_kinds_already_present_are_kept():
    response = ScriptedResponse(
        [b"\n", line("ADDED", "a", kind="Other", apiVersion="x/v1"), b"  \n"]
    )
    (event,) = list(WatchStream(response, PODS))
    assert event == WatchEvent("ADDED", event.object) and event.object["kind"] == "Other"


def test_an_error_event_raises_the_typed_error_and_closes_the_connection():
    status = {
        "kind": "Status",
        "code": 410,
        "reason": "Expired",
        "message": "too old resource version",
    }
    response = ScriptedResponse(
        [line("ADDED", "a"), orjson.dumps({"type": "ERROR", "object": status}) + b"\n"]
    )
    stream = WatchStream(response, PODS)
    iterator = iter(stream)
    assert next(iterator).type == "ADDED"
    with pytest.raises(Gone) as caught:
        next(iterator)
    assert caught.value.message == "too old resource version" and caught.value.status == status
    assert response.closed and response.released == 1 and stream.closed


def test_an_error_event_with_a_server_code_raises_server_error():
    status = {"kind": "Status", "code": 500, "reason": "InternalError", "message": "etcd"}
    with pytest.raises(ServerError):
        list(
            WatchStream(
                ScriptedResponse([orjson.dumps({"type": "ERROR", "object": status}) + b"\n"])
            )
        )


def test_a_stream_cut_inside_an_event_is_an_error_not_a_silent_end():
    data = line("ADDED", "a") + line("ADDED", "b")
    with pytest.raises(ValueError, match="unterminated"):
        list(WatchStream(ScriptedResponse([data[:-10]])))


def test_a_network_error_propagates_unless_the_stream_was_closed():
    with pytest.raises(ConnectionResetError):
        list(WatchStream(ScriptedResponse([line("ADDED", "a")], error=ConnectionResetError())))
    response = ScriptedResponse(
        [line("ADDED", "a"), line("ADDED", "b")], error=ConnectionResetError()
    )
    stream = WatchStream(response)
    iterator = iter(stream)
    next(iterator)
    stream.close()  # from the reader's own thread here; the same path as another thread's close
    assert list(iterator) == []
    assert response.shutdowns == 1 and response.closed and response.released == 1


def test_close_twice_is_harmless_and_a_closed_stream_releases_its_connection_once():
    response = ScriptedResponse([line("ADDED", "a")])
    stream = WatchStream(response)
    stream.close()
    stream.close()
    assert list(stream) == [] and response.released == 1 and response.shutdowns == 1
    assert "closed" in repr(stream)
