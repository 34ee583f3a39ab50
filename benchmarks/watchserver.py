"""A benchmark API server in its own process: pre-serialised Pods, listed and watched at full speed.

The pipeline benchmarks must measure the consumer, not the server, and every
consumer (Python, kopf, client-go) must read exactly the same bytes. So this
server does no work per request beyond writing bytes it built at start-up:

* ``GET /api/v1/namespaces/<ns>/pods`` lists the namespace's Pods (paged with
  ``limit``/``continue``, or in one response), at resourceVersion ``list_rv``;
* ``GET ...?watch=true`` (or ``watch=1``) holds the response at the **gate**
  (headers sent, no event) until someone POSTs ``/_bench/go``; then it writes
  every ``MODIFIED`` event after the requested resourceVersion as fast as
  the socket takes them (chunks of about 64 KB of whole lines), and then
  keeps the stream open, silent, until the harness re-arms the gate;
  ``sendInitialEvents=true`` (a streaming list, how pyinformers and client-go
  sync by default) first streams the namespace's Pods as ``ADDED`` events,
  then a ``BOOKMARK`` at ``list_rv`` annotated ``k8s.io/initial-events-end:
  "true"``, as kube-apiserver does (all pre-framed, before the gate), and
  then goes on like a watch from ``list_rv``;
* with a ``pace`` (events per second) a namespace's events are written one
  per chunk at that rate instead, each stamped with the wall time it was
  sent (``metadata.annotations["bench/sent"]``), for latency measurements;
* discovery (``/api``, ``/api/v1``, ``/apis``, ``/version``) is enough for the
  official client, kopf and client-go;
* with ``plan["tls"] = [certfile, keyfile]`` it serves HTTPS, and writes each
  event as a chunk of its own, one write each, as kube-apiserver does: over
  TLS a write is a record and a client's read returns at most one record,
  so how the server writes decides how often a client reads. (Over plain
  HTTP the bytes arrive as one stream whatever the writes were.)

A consumer syncs its cache from the list, opens its watch (held at the gate),
and when it is ready -- cache synced, initial keys reconciled -- starts its
clock and POSTs ``/_bench/go``. Timing therefore starts with a synced cache.

:class:`WatchServer` runs it in a spawned child process (its own core and GIL)
and re-arms the gate between consumers. Nothing here is pyinformers: the
server must be neutral between the consumers it serves.
"""

from __future__ import annotations

import socket
import ssl
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson

from benchmarks.server_process import ChildServer

CHUNK_BYTES = 64 * 1024
_GONE = (BrokenPipeError, ConnectionResetError, ssl.SSLEOFError)  # a consumer that hung up
SENT_PLACEHOLDER = b"0000000000.000000"  # fixed width: replaced with the send time in paced mode


class Namespace:
    """The pre-serialised Pods and events of one namespace."""

    def __init__(
        self,
        name: str,
        pods: int,
        events: int,
        first_rv: int,
        pace: float = 0.0,
        per_event: bool = False,
    ) -> None:
        from benchmarks.pods import make_pod

        self.name = name
        self.pace = pace
        self.per_event = per_event  # one chunk (one write) per event
        self.list_rv = first_rv + pods
        names = []
        self.items: list[bytes] = []
        for i in range(pods):
            pod = make_pod(i, name)
            pod["metadata"]["resourceVersion"] = str(first_rv + 1 + i)
            if pace:
                pod["metadata"].setdefault("annotations", {})["bench/sent"] = (
                    SENT_PLACEHOLDER.decode()
                )
            names.append(pod["metadata"]["name"])
            self.items.append(orjson.dumps(pod))
        # Event k modifies Pod k % pods: resourceVersions list_rv+1 .. list_rv+events, in order.
        self.lines: list[bytes] = []
        for k in range(events):
            i = k % pods
            old_rv = b'"resourceVersion":"%d"' % (first_rv + 1 + i)
            new_rv = b'"resourceVersion":"%d"' % (self.list_rv + 1 + k)
            body = self.items[i].replace(old_rv, new_rv, 1)
            body = body.replace(b'"restartCount":0', b'"restartCount":%d' % (1 + k // pods), 1)
            self.lines.append(b'{"type":"MODIFIED","object":' + body + b"}\n")
        self.last_rv = str(self.list_rv + events) if events else str(self.list_rv)
        self.last_key = f"{name}/{names[(events - 1) % pods]}" if events and pods else ""
        self.chunks = _frame(self.lines, per_event)
        # A streaming list: every Pod as ADDED, then the bookmark that ends the initial events.
        end = {
            "type": "BOOKMARK",
            "object": {
                "kind": "Pod",
                "apiVersion": "v1",
                "metadata": {
                    "resourceVersion": str(self.list_rv),
                    "annotations": {"k8s.io/initial-events-end": "true"},
                },
            },
        }
        self.initial_chunks = _frame(
            [b'{"type":"ADDED","object":' + item + b"}\n" for item in self.items]
            + [orjson.dumps(end) + b"\n"],
            per_event,
        )

    def info(self) -> dict:
        return {
            "list_rv": str(self.list_rv),
            "last_rv": self.last_rv,
            "last_key": self.last_key,
            "pods": len(self.items),
            "events": len(self.lines),
            "pod_bytes": len(self.items[0]) if self.items else 0,
        }

    def list_body(self, limit: int, start: int) -> bytes:
        end = len(self.items) if not limit else min(len(self.items), start + limit)
        meta = {"resourceVersion": str(self.list_rv)}
        if end < len(self.items):
            meta["continue"] = str(end)
            meta["remainingItemCount"] = len(self.items) - end
        return (
            b'{"kind":"PodList","apiVersion":"v1","metadata":'
            + orjson.dumps(meta)
            + b',"items":['
            + b",".join(self.items[start:end])
            + b"]}"
        )

    def events_after(self, rv: int) -> int:
        """Index of the first event newer than ``rv``."""
        return max(0, min(len(self.lines), rv - self.list_rv))


def _frame(lines: list[bytes], per_event: bool = False) -> list[bytes]:
    """Whole lines grouped into HTTP chunks of about CHUNK_BYTES (one line each when ``per_event``),
    chunk framing included."""
    if per_event:
        return [_chunk(line) for line in lines]
    chunks, batch, size = [], [], 0
    for line in lines:
        batch.append(line)
        size += len(line)
        if size >= CHUNK_BYTES:
            chunks.append(_chunk(b"".join(batch)))
            batch, size = [], 0
    if batch:
        chunks.append(_chunk(b"".join(batch)))
    return chunks


def _chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


_DISCOVERY = {
    "/api": {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
    },
    "/apis": {"kind": "APIGroupList", "apiVersion": "v1", "groups": []},
    "/api/v1": {
        "kind": "APIResourceList",
        "groupVersion": "v1",
        "resources": [
            {
                "name": "pods",
                "singularName": "pod",
                "namespaced": True,
                "kind": "Pod",
                "verbs": ["get", "list", "watch"],
                "shortNames": ["po"],
            },
            {
                "name": "namespaces",
                "singularName": "namespace",
                "namespaced": False,
                "kind": "Namespace",
                "verbs": ["get", "list", "watch"],
            },
        ],
    },
    "/version": {"major": "1", "minor": "36", "gitVersion": "v1.36.0", "platform": "linux/amd64"},
}


class _State:
    def __init__(self, namespaces: dict[str, Namespace]) -> None:
        self.namespaces = namespaces
        self.cond = threading.Condition()
        self.generation = 0  # bumped by re-arming: ends the held streams of earlier consumers
        self.released = False  # the gate of the current generation
        self.watches = 0  # watches opened in the current generation


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state: _State  # set on the subclass made per server

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _json(self, code: int, body: Any) -> None:
        data = body if isinstance(body, bytes) else orjson.dumps(body)
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _not_found(self) -> None:
        self._json(
            404,
            {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "reason": "NotFound",
                "code": 404,
                "message": f"{self.path} not found",
            },
        )

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        if self.path.startswith("/_bench/go"):
            with self.state.cond:
                self.state.released = True
                self.state.cond.notify_all()
            self._json(200, {"released": True})
        else:
            self._not_found()

    def do_GET(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        path = url.path.rstrip("/") or "/"
        if path in _DISCOVERY:
            self._json(200, _DISCOVERY[path])
            return
        parts = path.split("/")
        # /api/v1/namespaces/<ns>/pods
        if len(parts) == 6 and parts[1:4] == ["api", "v1", "namespaces"] and parts[5] == "pods":
            ns = self.state.namespaces.get(parts[4])
            if ns is None:
                self._json(
                    200,
                    b'{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}',
                )
            elif query.get("watch") in ("true", "1"):
                self._watch(ns, query)
            else:
                start = int(query.get("continue") or 0)
                self._json(200, ns.list_body(int(query.get("limit") or 0), start))
            return
        if path == "/api/v1/namespaces" and query.get("watch") in ("true", "1"):
            self._hold()  # kopf watches namespaces; nothing ever changes there
            return
        if path == "/api/v1/namespaces":
            items = [
                {"metadata": {"name": n, "resourceVersion": "1"}} for n in self.state.namespaces
            ]
            self._json(
                200,
                {
                    "kind": "NamespaceList",
                    "apiVersion": "v1",
                    "metadata": {"resourceVersion": "1"},
                    "items": items,
                },
            )
            return
        self._not_found()

    def _hold(self) -> None:
        """An empty watch, open until the harness re-arms the gate."""
        state = self.state
        with state.cond:
            generation = state.generation
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self.wfile.flush()
        with state.cond:
            while state.generation == generation:
                state.cond.wait(1.0)
        try:
            self.wfile.write(b"0\r\n\r\n")
        except _GONE:
            self.close_connection = True

    def _watch(self, ns: Namespace, query: dict) -> None:
        state = self.state
        with state.cond:
            generation = state.generation
            state.watches += 1
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        write = self.wfile.write
        try:
            rv = int(query.get("resourceVersion") or 0)
            if query.get("sendInitialEvents") == "true":
                for chunk in ns.initial_chunks:
                    write(chunk)
                self.wfile.flush()
                rv = ns.list_rv
            with state.cond:  # the gate
                while not state.released and state.generation == generation:
                    state.cond.wait(1.0)
                if state.generation != generation:
                    return
            first = ns.events_after(rv)
            if ns.pace:
                interval = 1.0 / ns.pace
                due = time.perf_counter()
                for line in ns.lines[first:]:
                    delay = due - time.perf_counter()
                    if delay > 0:
                        time.sleep(delay)
                    due += interval
                    write(_chunk(line.replace(SENT_PLACEHOLDER, b"%017.6f" % time.time(), 1)))
                    self.wfile.flush()
            elif first == 0:
                for chunk in ns.chunks:
                    write(chunk)
            else:
                for chunk in _frame(ns.lines[first:], ns.per_event):
                    write(chunk)
            self.wfile.flush()
            with state.cond:  # hold the stream open, silent, until the next consumer
                deadline = time.monotonic() + float(query.get("timeoutSeconds") or 3600)
                while state.generation == generation and time.monotonic() < deadline:
                    state.cond.wait(1.0)
            write(b"0\r\n\r\n")
        except _GONE:
            self.close_connection = True


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A consumer that hangs up mid-request or mid-handshake (over TLS, an alert) is not news."""
        import sys

        if not isinstance(sys.exc_info()[1], (ssl.SSLError, *_GONE)):
            super().handle_error(request, client_address)


def _serve(conn: Any, plan: dict) -> None:
    """Child process: build the namespaces, serve, obey the harness (``rearm``, ``stop``)."""
    import gc

    gc.disable()
    tls = plan.get("tls")
    namespaces: dict[str, Namespace] = {}
    rv = 1000
    for name, spec in plan["namespaces"].items():
        ns = Namespace(
            name,
            spec["pods"],
            spec.get("events", 0),
            rv,
            spec.get("pace", 0.0),
            per_event=bool(tls),
        )
        namespaces[name] = ns
        rv = int(ns.last_rv) + 1000
    gc.collect()
    gc.freeze()
    gc.enable()
    state = _State(namespaces)
    handler = type("Handler", (_Handler,), {"state": state})
    httpd = _Server(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    if tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*tls)
        httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, name="bench-watchserver", daemon=True)
    thread.start()
    conn.send(
        {
            "url": f"{'https' if tls else 'http'}://127.0.0.1:{httpd.server_address[1]}",
            "namespaces": {n: ns.info() for n, ns in namespaces.items()},
        }
    )
    try:
        while True:
            command = conn.recv()
            if command == "rearm":
                with state.cond:
                    state.generation += 1
                    state.released = False
                    state.watches = 0
                    state.cond.notify_all()
                conn.send("ok")
            else:
                break
    except EOFError:
        pass
    httpd.shutdown()


class WatchServer(ChildServer):
    """The benchmark server in a spawned child process;
    ``plan = {"namespaces": {ns: {pods, events, pace}}, "tls": [certfile, keyfile] (optional)}``."""

    def __init__(self, plan: dict, *, timeout: float = 600.0) -> None:
        super().__init__(_serve, plan, name="bench-watchserver", timeout=timeout)
        self.url: str = self.report["url"]
        self.namespaces: dict[str, dict] = self.report["namespaces"]
        #: the CA file a client must trust (the server's self-signed certificate), or None over HTTP
        self.ca_file: str | None = plan["tls"][0] if plan.get("tls") else None

    def rearm(self) -> None:
        """End every held stream and close the gate again (between two consumers)."""
        self._conn.send("rearm")
        if not self._conn.poll(30):
            raise RuntimeError("the benchmark watch server does not answer")
        self._conn.recv()

    def kubeconfig(self) -> dict:
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "bench",
            "clusters": [
                {
                    "name": "bench",
                    "cluster": {
                        "server": self.url,
                        **({"certificate-authority": self.ca_file} if self.ca_file else {}),
                    },
                }
            ],
            "users": [{"name": "bench", "user": {"token": "bench"}}],
            "contexts": [
                {
                    "name": "bench",
                    "context": {"cluster": "bench", "user": "bench", "namespace": "default"},
                }
            ],
        }
