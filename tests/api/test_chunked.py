"""The chunked-body reader behind every watch: framing, faults, and the connection it leaves behind."""

from __future__ import annotations

import socket
import ssl
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from urllib3.exceptions import ProtocolError, ReadTimeoutError

from pyinformers.api import ResourceClient
from pyinformers.api import _watch as watch_module
from pyinformers.api._chunked import fast_chunked_reader, read_chunked_body
from pyinformers.resources import CONFIGMAPS
from pyinformers.testing.apiserver._tls import self_signed_certificate


class Original:
    """http.client's response object, as far as the reader touches it."""

    def __init__(self, fp: object) -> None:
        self.fp = fp
        self.closes = 0

    def close(self) -> None:
        self.closes += 1


class Reads:
    """A socket file whose ``read1`` returns the given pieces, then EOF (or raises ``error``)."""

    def __init__(self, pieces: list[bytes], error: BaseException | None = None) -> None:
        self.pieces = list(pieces)
        self.error = error
        self.sizes: list[int] = []

    def read1(self, size: int) -> bytes:
        self.sizes.append(size)
        if self.pieces:
            piece = self.pieces.pop(0)
            assert len(piece) <= size
            return piece
        if self.error is not None:
            raise self.error
        return b""


class Response:
    """urllib3's HTTPResponse, as far as the reader looks at it."""

    chunked = True
    chunk_left = None

    def __init__(self, reads: Reads, headers: dict | None = None) -> None:
        self._fp = self._original_response = Original(reads)
        self.headers = headers or {}


def encode(payloads: list[bytes], *, extension: bytes = b"", trailers: list[bytes] = ()) -> bytes:
    body = b"".join(b"%x%s\r\n%s\r\n" % (len(p), extension, p) for p in payloads if p)
    return body + b"0\r\n" + b"".join(t + b"\r\n" for t in trailers) + b"\r\n"


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in zip(points, points[1:]) if b > a]


def read_all(pieces: list[bytes], **kwargs) -> tuple[list[bytes], Response]:
    response = Response(Reads(pieces))
    read1 = fast_chunked_reader(response)
    assert read1 is not None
    return list(read_chunked_body(response, read1, **kwargs)), response


@settings(max_examples=300, deadline=None)
@given(
    payloads=st.lists(st.binary(min_size=1, max_size=300), max_size=12),
    cuts=st.lists(st.integers(min_value=0, max_value=4000), max_size=30),
    extension=st.sampled_from([b"", b";name=value", b" ;x"]),
    trailers=st.sampled_from([[], [b"X-Trailer: 1"], [b"A: b", b"C: d"]]),
    read_size=st.sampled_from([1, 7, 64, 256 * 1024]),
)
def test_the_payload_comes_out_whole_however_the_body_is_split_into_reads(
    payloads, cuts, extension, trailers, read_size
):
    data = encode(payloads, extension=extension, trailers=trailers)
    pieces = [p[i : i + read_size] for p in split(data, cuts) for i in range(0, len(p), read_size)]
    out, response = read_all(pieces, read_size=read_size)
    assert b"".join(out) == b"".join(payloads)
    assert all(out)  # never an empty piece
    assert (
        response._original_response.closes == 1
    )  # read to the end: the connection is clean for reuse


def test_several_chunks_in_one_read_come_out_as_one_piece_and_one_read_asks_for_a_lot():
    data = encode([b"a" * 10, b"b" * 20, b"c" * 30])
    reads = Reads([data])
    response = Response(reads)
    out = list(read_chunked_body(response, fast_chunked_reader(response)))
    assert out == [b"a" * 10 + b"b" * 20 + b"c" * 30]
    assert reads.sizes[0] >= 256 * 1024


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(b"5\r\nhel", id="inside-a-payload"),
        pytest.param(b"5\r\nhello\r\n", id="between-chunks"),
        pytest.param(b"5\r\nhello\r\n", id="before-the-last-chunk"),
        pytest.param(b"", id="before-anything"),
        pytest.param(b"5", id="inside-a-size-line"),
    ],
)
def test_a_body_cut_before_its_last_chunk_is_a_protocol_error_not_a_quiet_end(data):
    response = Response(Reads([data] if data else []))
    with pytest.raises(ProtocolError, match="ended prematurely"):
        list(read_chunked_body(response, fast_chunked_reader(response)))
    assert response._original_response.closes == 0


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b"zz\r\nhello\r\n0\r\n\r\n", "bad chunk-size"),
        (b"-5\r\nhello\r\n0\r\n\r\n", "bad chunk-size"),
        (b"5\r\nhelloXY0\r\n\r\n", "no CRLF"),
    ],
)
def test_a_malformed_frame_is_a_protocol_error(data, match):
    response = Response(Reads([data]))
    with pytest.raises(ProtocolError, match=match):
        list(read_chunked_body(response, fast_chunked_reader(response)))


def test_an_endless_size_line_is_refused_rather_than_buffered():
    response = Response(Reads([b"1" * 70_000]))
    with pytest.raises(ProtocolError, match="too long"):
        list(read_chunked_body(response, fast_chunked_reader(response)))


def test_a_read_timeout_is_urllib3s_read_timeout_error():
    response = Response(Reads([b"5\r\nhello\r\n"], error=TimeoutError("timed out")))
    stream = read_chunked_body(response, fast_chunked_reader(response))
    assert next(stream) == b"hello"
    with pytest.raises(ReadTimeoutError):
        next(stream)


def test_responses_the_fast_reader_cannot_read_fall_back_to_urllib3():
    assert fast_chunked_reader(Response(Reads([]), headers={"content-encoding": "gzip"})) is None
    assert (
        fast_chunked_reader(Response(Reads([]), headers={"content-encoding": "identity"}))
        is not None
    )
    started = Response(Reads([]))
    started.chunk_left = 3  # urllib3 already read part of a chunk
    assert fast_chunked_reader(started) is None
    plain = Response(Reads([]))
    plain.chunked = False
    assert fast_chunked_reader(plain) is None
    assert fast_chunked_reader(object()) is None


# --------------------------------------------------------------------------- over TLS


@pytest.fixture
def tls_pair(tmp_path):
    """A connected (server, client) pair of TLS sockets; the client trusts the server's certificate."""
    cert, key = self_signed_certificate(tmp_path)
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(cert, key)
    client_context = ssl.create_default_context(cafile=cert)
    raw_server, raw_client = socket.socketpair()
    accepted = {}
    handshake = threading.Thread(
        target=lambda: accepted.setdefault(
            "sock", server_context.wrap_socket(raw_server, server_side=True)
        )
    )
    handshake.start()
    client = client_context.wrap_socket(raw_client, server_hostname="localhost")
    handshake.join()
    yield accepted["sock"], client
    client.close()
    accepted["sock"].close()


def test_over_tls_records_already_there_are_read_together_not_one_per_read(tls_pair):
    server, client = tls_pair
    payloads = [b'{"type":"MODIFIED","n":%d}\n' % i * 10 for i in range(100)]
    for p in payloads:  # one write, one TLS record, per event: how kube-apiserver writes a watch
        server.sendall(b"%x\r\n%s\r\n" % (len(p), p))
    server.sendall(b"0\r\n\r\n")
    response = Response(Reads([]))
    response._fp = response._original_response = Original(client.makefile("rb"))
    read1 = fast_chunked_reader(response)
    assert read1 is not None
    out = list(read_chunked_body(response, read1))
    assert b"".join(out) == b"".join(payloads)
    assert len(out) < 10  # records that had arrived were read in one go (one per read: 100 pieces)


def test_over_tls_a_lone_record_is_returned_without_waiting_for_more(tls_pair):
    server, client = tls_pair
    response = Response(Reads([]))
    response._fp = response._original_response = Original(client.makefile("rb"))
    client.settimeout(5)
    stream = read_chunked_body(response, fast_chunked_reader(response))
    server.sendall(b"5\r\nhello\r\n")
    assert next(stream) == b"hello"  # returned at once: the next record is not waited for
    server.sendall(b"5\r\nworld\r\n0\r\n\r\n")
    assert list(stream) == [b"world"]


# --------------------------------------------------------------------------- over real HTTP


@pytest.fixture(params=["http", "https"])
def any_scheme_client(request, api_client, api_server_factory, tmp_path):
    """An ApiClient of the suite's plain-HTTP server, or of a TLS server (reads of one record each)."""
    if request.param == "http":
        return api_client
    server = api_server_factory(tls=self_signed_certificate(tmp_path))
    return server.api_client()


def test_a_watch_reads_every_event_and_leaves_its_connection_for_the_next_request(
    any_scheme_client, monkeypatch
):
    api_client = any_scheme_client
    readers = []

    def recorded(response):
        readers.append(fast_chunked_reader(response))
        return readers[-1]

    monkeypatch.setattr(watch_module, "fast_chunked_reader", recorded)
    configmaps = ResourceClient(api_client, CONFIGMAPS)
    rv = configmaps.list("default").resource_version
    before = idle_ports(api_client)
    assert len(before) == 1
    big = "x" * 20_000  # enough events to span many socket reads and HTTP chunks
    for i in range(40):
        configmaps.create({"metadata": {"name": f"c{i}"}, "data": {"big": big}}, "default")
    names = [
        e.object["metadata"]["name"]
        for e in configmaps.watch(
            "default", resource_version=rv, timeout_seconds=1, allow_bookmarks=False
        )
    ]
    assert names == [f"c{i}" for i in range(40)]
    assert (
        len(readers) == 1 and readers[0] is not None
    )  # read by our reader, not urllib3's fallback
    assert idle_ports(api_client) == before  # the watch's connection went back to the pool
    configmaps.list("default")
    assert idle_ports(api_client) == before  # and served the next request


def idle_ports(api_client) -> list[int]:
    """The local ports of the pool's idle connections: the TCP connections kept for reuse."""
    pool = api_client.rest_client.pool_manager.connection_from_url(api_client.configuration.host)
    return sorted(
        c.sock.getsockname()[1]
        for c in list(pool.pool.queue)
        if c is not None and c.sock is not None
    )
