"""Record golden transcripts of a real kube-apiserver, the ones the replayer holds the embedded server to.

Run from the repository root::

    python -m tests.support.record_transcripts [--out DIR] [SCENARIO ...]

It starts one real control plane (etcd, kube-apiserver and
kube-controller-manager from ``make envtest``), plays every scenario named
(all of them, in :data:`SCENARIOS` order, by default) and writes one JSON
Lines file per scenario into ``DIR`` (default
``tests/transcripts/<the server's gitVersion>/``), normalised as
``tests/transcripts/README.md`` describes so that two recordings of the same
scenario compare equal.

A scenario is either **data**, a ``transcript_scenarios/NAME.jsonl`` file of
step templates (see :func:`play_template`), or a **small function** taking a
:class:`Recorder` and calling :meth:`Recorder.request` and
:meth:`Recorder.watch`; both are registered in :data:`SCENARIOS`, the one
place that lists them. What a recorder does between steps (waiting for a
controller, compacting etcd, restarting kube-apiserver) is not recorded; the
note of the step that follows says what happened.

Not thread-safe: one recorder, one control plane, one scenario at a time.
"""

from __future__ import annotations

import argparse
import base64
import copy
import http.client
import json
import re
import ssl
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

__all__ = [
    "Answer",
    "Recorder",
    "Scenario",
    "SCENARIOS",
    "PREDICATES",
    "scenario",
    "play_template",
    "normalise",
    "main",
]

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
TEMPLATES = HERE / "transcript_scenarios"
DEFAULT_ROOT = REPO / "tests" / "transcripts"
API_AUDIENCE = "https://kubernetes.default.svc.cluster.local"
USER_AGENT = "transcript-recorder/1.0"  # managedFields name the manager after its first word

Json = Any


# -- answers and waiting --------------------------------------------------------------------------


@dataclass
class Answer:
    """What the server answered one request (raw, before normalisation)."""

    status: int
    content_type: str
    body: Json = None
    warnings: list[str] = field(default_factory=list)
    events: list[Json] | None = None  # a watch's events, None for a plain answer
    stream_end: str | None = None
    timing: list[str] = field(default_factory=list)  # "TYPE@1.2s" per event of a watch
    seconds: float = 0.0
    size: int = 0  # bytes of the body as received


Predicate = Callable[[Answer], bool]


def _conditions(answer: Answer) -> dict[str, str]:
    body = answer.body if isinstance(answer.body, dict) else {}
    conditions = (body.get("status") or {}).get("conditions") or []
    return {str(c.get("type")): str(c.get("status")) for c in conditions if isinstance(c, dict)}


def _deployment_synced(answer: Answer) -> bool:
    """The deployment controller has caught up: observed the generation, counted its Pods, written the revision."""
    if answer.status != 200 or not isinstance(answer.body, dict):
        return False
    meta, spec, status = (
        answer.body["metadata"],
        answer.body.get("spec", {}),
        answer.body.get("status", {}),
    )
    want = spec.get("replicas", 1)
    return (
        status.get("observedGeneration") == meta.get("generation")
        and "deployment.kubernetes.io/revision" in (meta.get("annotations") or {})
        and status.get("replicas", 0) == want
        and status.get("updatedReplicas", 0) == want
        and "Progressing" in _conditions(answer)
    )


#: Conditions a step (``until``) or a wait before it polls for, by name.
PREDICATES: dict[str, Predicate] = {
    "deployment-synced": _deployment_synced,
    "established": lambda a: _conditions(a).get("Established") == "True",
    "approval-condition": lambda a: (
        "KubernetesAPIApprovalPolicyConformant" in _conditions(a)
        and _conditions(a).get("Established") == "True"
    ),
    "deleting": lambda a: (
        a.status == 200 and bool((a.body.get("metadata") or {}).get("deletionTimestamp"))
    ),
    "no-owner-references": lambda a: (
        a.status == 200 and not (a.body.get("metadata") or {}).get("ownerReferences")
    ),
    "namespace-content-remaining": lambda a: (
        _conditions(a).get("NamespaceContentRemaining") == "True"
        and _conditions(a).get("NamespaceFinalizersRemaining") == "True"
    ),
    "ok": lambda a: a.status == 200,
}


def _predicate(until: str | Mapping[str, Any] | Predicate) -> Predicate:
    if callable(until):
        return until
    if isinstance(until, str):
        try:
            return PREDICATES[until]
        except KeyError:
            raise ValueError(
                f"unknown condition {until!r} (known: {', '.join(sorted(PREDICATES))})"
            ) from None
    if set(until) == {"status"}:
        return lambda a: a.status == int(until["status"])
    raise ValueError(f"a condition is a name or {{'status': N}}, not {until!r}")


def _poll(what: str, probe: Callable[[], Answer], until: Predicate, timeout: float) -> Answer:
    """Call ``probe`` until ``until`` holds for its answer; the last answer. Polls a remote server: backs off."""
    deadline = time.monotonic() + timeout
    pause = 0.05
    while True:
        answer = probe()
        if until(answer):
            return answer
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"{what}: condition not met in {timeout:.0f} s (last answer {answer.status}: {str(answer.body)[:300]})"
            )
        time.sleep(pause)  # nothing to wait on: the condition is on another process
        pause = min(pause * 1.5, 0.5)


# -- the recorder ----------------------------------------------------------------------------------


@dataclass
class _Line:
    step: str
    note: str
    request: dict
    answer: Answer | None = None
    verbatim: bool = False


class Recorder:
    """Sends one scenario's requests to a real kube-apiserver and keeps what it answered.

    ``control_plane`` is a started ``ControlPlane``. Each :meth:`request` and
    :meth:`watch` is one line of the transcript, in call order; requests made
    inside a ``with recorder.watch(...)`` block run while that watch is open.
    ``answers`` maps step names to raw answers, for later steps to use.
    """

    def __init__(self, control_plane: Any, *, timeout: float = 120.0) -> None:
        self.cp = control_plane
        self.timeout = timeout
        self.lines: list[_Line] = []
        self.answers: dict[str, Answer] = {}
        url = urlsplit(control_plane.url)
        self._host, self._port = url.hostname or "127.0.0.1", url.port or 443
        self._ssl = (
            ssl.create_default_context(cafile=str(control_plane.ca_cert))
            if url.scheme == "https"
            else None
        )

    # -- HTTP ------------------------------------------------------------------------------------

    def _auth_header(self, auth: str | None) -> str | None:
        if auth is None:
            return f"Bearer {self.cp.token}"
        if auth == "none":
            return None
        if auth == "invalid-token":
            return "Bearer not-a-valid-token"
        if auth == "admin-token-lowercase-bearer":
            return f"bearer {self.cp.token}"
        if auth == "serviceaccount-token":
            for answer in reversed(list(self.answers.values())):
                status = answer.body.get("status") if isinstance(answer.body, dict) else None
                token = status.get("token") if isinstance(status, dict) else None
                if token:
                    return f"Bearer {token}"
            raise ValueError("auth 'serviceaccount-token' needs a TokenRequest answer before it")
        raise ValueError(
            f"unknown auth {auth!r} (none, invalid-token, admin-token-lowercase-bearer, serviceaccount-token)"
        )

    def _open(
        self,
        method: str,
        path: str,
        query: Mapping[str, str],
        headers: Mapping[str, str],
        body: bytes | None,
        auth: str | None,
        timeout: float,
    ) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        target = path
        if query:
            target += "?" + "&".join(
                f"{quote(str(k), safe='')}={quote(str(v), safe='')}" for k, v in query.items()
            )
        conn: http.client.HTTPConnection
        if self._ssl is None:  # a plain-HTTP server (a dry run against the embedded one)
            conn = http.client.HTTPConnection(self._host, self._port, timeout=timeout)
        else:
            conn = http.client.HTTPSConnection(
                self._host, self._port, context=self._ssl, timeout=timeout
            )
        conn.putrequest(method, target, skip_accept_encoding=True)
        conn.putheader("User-Agent", USER_AGENT)
        authorization = self._auth_header(auth)
        if authorization:
            conn.putheader("Authorization", authorization)
        for key, value in headers.items():
            conn.putheader(key, value)
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        return conn, conn.getresponse()

    def _send(self, request: dict, timeout: float = 60.0) -> Answer:
        began = time.monotonic()
        conn, resp = self._open(
            request["method"],
            request["path"],
            request.get("query") or {},
            request.get("headers") or {},
            _encode_body(request),
            request.get("auth"),
            timeout,
        )
        try:
            raw = resp.read()
        finally:
            conn.close()
        try:
            body: Json = json.loads(raw)
        except ValueError:
            body = raw.decode("utf-8", errors="replace")
        return Answer(
            resp.status,
            resp.headers.get("Content-Type", ""),
            body,
            resp.headers.get_all("Warning") or [],
            seconds=time.monotonic() - began,
            size=len(raw),
        )

    def get(self, path: str, *, query: Mapping[str, str] | None = None) -> Answer:
        """An unrecorded GET as the admin."""
        return self._send(
            {
                "method": "GET",
                "path": path,
                "query": dict(query or {}),
                "headers": {"Accept": "application/json"},
            }
        )

    def wait(
        self,
        path: str,
        until: str | Mapping[str, Any] | Predicate,
        *,
        timeout: float | None = None,
    ) -> Answer:
        """Poll ``path`` (unrecorded GETs) until ``until`` holds; the last answer."""
        return _poll(
            f"GET {path}", lambda: self.get(path), _predicate(until), timeout or self.timeout
        )

    # -- out of band -------------------------------------------------------------------------------

    def compact_etcd(self) -> int:
        """Compact etcd to its current revision (as kube-apiserver's compactor does); the revision."""
        etcd = _etcd_url(self.cp)

        def call(api: str, payload: dict) -> dict:
            request = urllib.request.Request(
                f"{etcd}/v3/kv/{api}", data=json.dumps(payload).encode(), method="POST"
            )
            with urllib.request.urlopen(request, timeout=30) as response:
                return json.loads(response.read())

        # kube-apiserver's protocol: record the revision under compact_rev_key (compare-and-swap on
        # its version), then compact. kube-apiserver watches that key, and its watch caches read the
        # compacted revision from it every 15 s: a compaction that skips the key goes unnoticed.
        key = base64.b64encode(b"compact_rev_key").decode()
        found = call("range", {"key": key})
        revision = int(found["header"]["revision"])
        version = int((found.get("kvs") or [{}])[0].get("version", 0))
        swapped = call(
            "txn",
            {
                "compare": [
                    {"key": key, "target": "VERSION", "result": "EQUAL", "version": str(version)}
                ],
                "success": [
                    {
                        "requestPut": {
                            "key": key,
                            "value": base64.b64encode(str(revision).encode()).decode(),
                        }
                    }
                ],
            },
        )
        if not swapped.get("succeeded"):
            raise RuntimeError(
                "compact_rev_key changed under the recorder (kube-apiserver compacting at the same moment?)"
            )
        call("compaction", {"revision": str(revision), "physical": True})
        return revision

    def restart_apiserver(self) -> None:
        """Stop kube-apiserver and start it again on the same etcd (kube-controller-manager stays up)."""
        self.cp.restart_apiserver()

    def _after_create(self, request: dict, answer: Answer) -> None:
        """Wait until what a scenario just created is usable, as a client would (unrecorded).

        A Namespace: kube-controller-manager has put ``kube-root-ca.crt`` and the
        ``default`` ServiceAccount in it. A CustomResourceDefinition: it is
        Established and its resource answers a list.
        """
        if (
            request["method"] != "POST"
            or answer.status != 201
            or request.get("query", {}).get("dryRun")
        ):
            return
        path = request["path"].rstrip("/")
        if path == "/api/v1/namespaces":
            namespace = answer.body["metadata"]["name"]
            self.wait(f"/api/v1/namespaces/{namespace}/configmaps/kube-root-ca.crt", "ok")
            self.wait(f"/api/v1/namespaces/{namespace}/serviceaccounts/default", "ok")
        elif path == "/apis/apiextensions.k8s.io/v1/customresourcedefinitions":
            crd = answer.body
            self.wait(f"{path}/{crd['metadata']['name']}", "established")
            version = next(v["name"] for v in crd["spec"]["versions"] if v.get("storage"))
            self.wait(
                f"/apis/{crd['spec']['group']}/{version}/{crd['spec']['names']['plural']}", "ok"
            )

    # -- recorded steps --------------------------------------------------------------------------------

    def request(
        self,
        step: str,
        method: str,
        path: str,
        *,
        note: str,
        query: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        body: Json = None,
        body_raw: bool = False,
        auth: str | None = None,
        until: None | str | Mapping[str, Any] | Predicate = None,
        keep: Mapping[str, Sequence[str]] | None = None,
        summary: str | None = None,
        verbatim: bool = False,
    ) -> Answer:
        """Send one request and record it with its answer as the line ``step``.

        ``headers`` default to ``Accept: application/json`` (plus a JSON
        Content-Type when there is a body); ``body_raw`` sends ``body`` as
        text. ``until``: repeat the request (unrecorded) until the condition
        holds, and record the last one (GETs only). ``keep``: trim list
        entries of the answer to the names given (``{"body.resources":
        ["pods"]}``; ``[*]`` in a path means every item); ``summary``: replace
        a large document by a summary (``openapi-v2``, ``openapi-v3``);
        ``verbatim``: the line is not normalised (``/version``).
        """
        if step in self.answers:
            raise ValueError(f"step {step!r} is recorded twice in one scenario")
        sent = _request_dict(method, path, query, headers, body, body_raw, auth)
        if until is not None:
            if method != "GET":
                raise ValueError(f"{step}: 'until' repeats the request, so only a GET may have it")
            answer = _poll(step, lambda: self._send(sent), _predicate(until), self.timeout)
        else:
            answer = self._send(sent)
        total = None
        if keep:
            answer.body, total = _keep(answer.body, keep)
        if summary:
            answer.body = {"recorder_summary": _SUMMARIES[summary](answer)}
        note = note.replace("{total}", str(total)) if total is not None else note
        self.lines.append(_Line(step, note, sent, answer, verbatim))
        self.answers[step] = answer
        self._after_create(sent, answer)
        return answer

    @contextmanager
    def watch(
        self,
        step: str,
        path: str,
        *,
        note: str,
        query: Mapping[str, str] | None = None,
        headers: Mapping[str, str] | None = None,
        auth: str | None = None,
        stop_after: int | None = None,
        wait_events: int = 0,
    ) -> Iterator[Answer]:
        """Open a watch recorded as ``step``; the block's requests run while it is open (their lines follow it).

        On leaving the block the watch is read to its end: the server closing
        it (``timeoutSeconds``, an ERROR event, a restart), or ``stop_after``
        events. ``wait_events``: enter the block only once that many events
        came (e.g. a streaming list's initial events and bookmark). A watch
        the server refuses is recorded as a plain answer.
        """
        if step in self.answers:
            raise ValueError(f"step {step!r} is recorded twice in one scenario")
        sent = _request_dict("GET", path, query, headers, None, False, auth)
        line = _Line(step, note, sent)
        self.lines.append(line)
        timeout = (
            float((query or {}).get("timeoutSeconds") or 0)
            if str((query or {}).get("timeoutSeconds", "")).isdigit()
            else 0.0
        )
        began = time.monotonic()
        conn, resp = self._open(
            "GET", sent["path"], sent["query"], sent["headers"], None, auth, timeout + 90
        )
        answer = Answer(
            resp.status,
            resp.headers.get("Content-Type", ""),
            warnings=resp.headers.get_all("Warning") or [],
        )
        arrived = threading.Condition()
        reader: threading.Thread | None = None
        if resp.status == 200:
            answer.events = []

            def read() -> None:
                assert answer.events is not None
                try:
                    while stop_after is None or len(answer.events) < stop_after:
                        raw = resp.readline()
                        if not raw:
                            answer.stream_end = "closed by server"
                            break
                        if raw.strip():
                            event = json.loads(raw)
                            with arrived:
                                answer.events.append(event)
                                answer.timing.append(
                                    f"{event.get('type')}@{time.monotonic() - began:.1f}s"
                                )
                                arrived.notify_all()
                    else:
                        answer.stream_end = f"client stopped after {stop_after} events"
                except (OSError, http.client.HTTPException, ValueError) as exc:
                    answer.stream_end = f"failed: {exc!r}"
                finally:
                    answer.seconds = time.monotonic() - began
                    conn.close()
                    with arrived:
                        arrived.notify_all()

            reader = threading.Thread(target=read, name=f"transcript-watch-{step}", daemon=True)
            reader.start()
            with arrived:
                if not arrived.wait_for(
                    lambda: len(answer.events or []) >= wait_events or not reader.is_alive(),
                    self.timeout,
                ):
                    raise TimeoutError(f"{step}: {wait_events} events did not come")
        else:
            raw = resp.read()
            conn.close()
            try:
                answer.body = json.loads(raw)
            except ValueError:
                answer.body = raw.decode("utf-8", errors="replace")
        try:
            yield answer
        finally:
            if reader is not None:
                reader.join(timeout + 90)
                if reader.is_alive():
                    conn.close()
                    raise TimeoutError(
                        f"{step}: the watch did not end ({len(answer.events or [])} events read)"
                    )
                line.note = f"{note} [timing in this run, informative only: {', '.join(answer.timing) or 'no events'}; stream ended after {answer.seconds:.1f}s]"
            line.answer = answer
            self.answers[step] = answer

    def transcript(self) -> list[dict]:
        """The recorded lines, normalised (see :func:`normalise`)."""
        raw = []
        for line in self.lines:
            assert line.answer is not None, f"{line.step} has no answer"
            raw.append(
                {
                    "step": line.step,
                    "note": line.note,
                    "request": line.request,
                    "response": _response_dict(line.answer),
                    "verbatim": line.verbatim,
                }
            )
        return normalise(raw)


def _request_dict(
    method: str,
    path: str,
    query: Mapping[str, str] | None,
    headers: Mapping[str, str] | None,
    body: Json,
    body_raw: bool,
    auth: str | None,
) -> dict:
    if headers is None:
        headers = (
            {"Content-Type": "application/json", "Accept": "application/json"}
            if body is not None
            else {"Accept": "application/json"}
        )
    sent: dict = {
        "method": method,
        "path": path,
        "query": {k: str(v) for k, v in (query or {}).items()},
        "headers": dict(headers),
        "body": body,
    }
    if body_raw:
        sent["body_raw"] = True
    if auth is not None:
        sent["auth"] = auth
    return sent


_ELIDED = re.compile(r"<(\d+) x '(.)' \([^)]*\); elided by the recorder>")


def _encode_body(request: dict) -> bytes | None:
    """The bytes to send: the JSON (or raw text), with an elided run ``<N x 'c' (...); elided ...>`` expanded."""
    body = request.get("body")
    if body is None:
        return None
    text = str(body) if request.get("body_raw") else json.dumps(body)
    return _ELIDED.sub(lambda m: m.group(2) * int(m.group(1)), text).encode()


def _response_dict(answer: Answer) -> dict:
    out: dict = {"status": answer.status, "content_type": answer.content_type}
    if answer.events is not None:
        out["events"] = answer.events
        out["stream_end"] = answer.stream_end
    else:
        out["body"] = answer.body
    if answer.warnings:
        out["warnings"] = answer.warnings
    return out


def _etcd_url(cp: Any) -> str:
    """etcd's client URL: ``cp.etcd_url`` where the control plane has one, else read from etcd's command line."""
    url = getattr(cp, "etcd_url", None)
    if url:
        return str(url)
    for arg in cp.components["etcd"].argv:
        if arg.startswith("--listen-client-urls="):
            return arg.split("=", 1)[1].split(",")[0]
    raise RuntimeError("cannot tell etcd's client URL from the control plane")


# -- trimming and summaries ------------------------------------------------------------------------


def _entry_name(entry: Json) -> str | None:
    if not isinstance(entry, dict):
        return None
    for key in ("name", "resource"):
        if isinstance(entry.get(key), str):
            return entry[key]
    meta = entry.get("metadata")
    return meta.get("name") if isinstance(meta, dict) else None


def _keep(body: Json, keep: Mapping[str, Sequence[str]]) -> tuple[Json, int | None]:
    """``body`` with the lists at ``keep``'s paths cut to the entries named (or their ``name/sub`` subresources).

    Returns the trimmed body and the length of the first list before trimming.
    """
    body = copy.deepcopy(body)
    total: int | None = None
    for path, names in keep.items():
        parts = path.split(".")
        assert parts[0] == "body", f"keep paths start with 'body.': {path}"
        holders = [body]
        for part in parts[1:-1]:
            star = part.endswith("[*]")
            key = part[:-3] if star else part
            holders = [
                x
                for h in holders
                for x in (h.get(key) or [] if star else [h.get(key)])
                if isinstance(x, dict)
            ]
        last = parts[-1]
        for holder in holders:
            entries = holder.get(last) or []
            if total is None:
                total = len(entries)
            holder[last] = [e for e in entries if (_entry_name(e) or "").split("/")[0] in names]
    return body, total


def _summary_v2(answer: Answer) -> dict:
    doc = answer.body
    return {
        "size_bytes": answer.size,
        "swagger": doc.get("swagger"),
        "info": doc.get("info"),
        "top_level_keys": sorted(doc),
        "paths": len(doc.get("paths", {})),
        "definitions": len(doc.get("definitions", {})),
    }


def _summary_v3(answer: Answer) -> dict:
    doc = answer.body
    return {
        "openapi": doc.get("openapi"),
        "info": doc.get("info"),
        "top_level_keys": sorted(doc),
        "paths": sorted(doc.get("paths", {})),
    }


_SUMMARIES: dict[str, Callable[[Answer], dict]] = {
    "openapi-v2": _summary_v2,
    "openapi-v3": _summary_v3,
}


# -- normalisation -----------------------------------------------------------------------------------

_UID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
_TIMESTAMP = re.compile(r"\b(\d{4})-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(?:Z|[+-]\d\d:\d\d)")
_JWT = re.compile(r"\beyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+")
_HASH = re.compile(r"\?hash=[A-Za-z0-9]+")
_RV_IN_MESSAGE = re.compile(
    r"resource version: (\d+)(?: \((\d+)\))?"  # too old resource version: A (B); Too large resource version: A
    r"|current: (\d+)"
    r"|ResourceVersion in (?:record|the precondition) \((\d+)\)"  # a delete precondition's 409
)
_KEPT_RVS = {"0", "1"}


def _walk(value: Json, visit: Callable[[str | None, Json], None], key: str | None = None) -> None:
    visit(key, value)
    if isinstance(value, dict):
        for k, v in value.items():
            _walk(v, visit, k)
    elif isinstance(value, list):
        for v in value:
            _walk(v, visit, key)


def _map_strings(value: Json, fn: Callable[[str | None, str], str], key: str | None = None) -> Json:
    if isinstance(value, str):
        return fn(key, value)
    if isinstance(value, dict):
        return {fn(None, k): _map_strings(v, fn, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_map_strings(v, fn, key) for v in value]
    return value


def normalise(lines: list[dict]) -> list[dict]:
    """One file's lines with uids, resourceVersions, continue tokens, times, generated names and secrets replaced.

    The rules of ``tests/transcripts/README.md``: uids and server-made
    continue tokens are numbered by first appearance; resourceVersions (in
    ``resourceVersion`` fields, the query, preconditions and the messages
    that quote them) by rank, ``"0"`` and ``"1"`` kept; RFC 3339 times become
    ``<time>``/``<microtime>`` unless in 2030 (sent by the recorder); a
    ``generateName`` suffix becomes ``<suffix>``; ``kube-root-ca.crt``'s CA,
    JWTs, the server's address and the OpenAPI hashes become fixed words.
    Lines with ``"verbatim": true`` are left as they are. Pure: returns new lines.
    """
    work = [{k: copy.deepcopy(v) for k, v in line.items() if k != "verbatim"} for line in lines]
    todo = [line for line, raw in zip(work, lines) if not raw.get("verbatim")]

    # structural secrets first
    generated: dict[str, str] = {}
    for line in todo:
        response = line["response"]
        for obj in [response.get("body")] + [e.get("object") for e in response.get("events") or []]:
            _scrub(obj, generated)

    rvs: set[int] = set()
    continues: list[str] = []

    def collect(key: str | None, value: Json) -> None:
        if (
            key == "resourceVersion"
            and isinstance(value, str)
            and value.isdigit()
            and value not in _KEPT_RVS
        ):
            rvs.add(int(value))
        if key == "message" and isinstance(value, str):
            for m in _RV_IN_MESSAGE.finditer(value):
                rvs.update(int(g) for g in m.groups() if g and g not in _KEPT_RVS)

    for line in todo:
        _walk(line["request"].get("body"), collect)
        _walk(line["response"], collect)
        q = line["request"].get("query", {})
        if str(q.get("resourceVersion", "")).isdigit() and q["resourceVersion"] not in _KEPT_RVS:
            rvs.add(int(q["resourceVersion"]))
        # server-made continue tokens, in order of first appearance
        for token in [q.get("continue")] + _continue_tokens(line["response"]):
            if token and token not in continues:
                continues.append(token)
    made = {t for line in todo for t in _continue_tokens(line["response"])}
    continue_ids = {t: i + 1 for i, t in enumerate(t for t in continues if t in made)}
    rank = {v: i + 1 for i, v in enumerate(sorted(rvs))}
    uids: dict[str, int] = {}

    def rv(text: str) -> str:
        return (
            f"<rv:{rank[int(text)]}>"
            if text.isdigit() and int(text) in rank and text not in _KEPT_RVS
            else text
        )

    def text(key: str | None, value: str) -> str:
        if key == "resourceVersion":
            value = rv(value)
        elif key == "continue" and value in continue_ids:
            value = f"<continue:{continue_ids[value]}>"
        elif key == "message":
            value = _RV_IN_MESSAGE.sub(lambda m: _replace_groups(m, rv), value)
        value = _UID.sub(lambda m: f"<uid:{uids.setdefault(m.group(0), len(uids) + 1)}>", value)
        value = _TIMESTAMP.sub(_time_word, value)
        value = _JWT.sub("<token>", value)
        value = _HASH.sub("?hash=<hash>", value)
        for name, replacement in generated.items():
            value = value.replace(name, replacement)
        return value

    for line in todo:
        for part in ("step", "note"):
            line[part] = text(None, line[part])
        line["request"] = _map_strings(line["request"], text)
        line["response"] = _map_strings(line["response"], text)
    return work


def _replace_groups(m: re.Match, fn: Callable[[str], str]) -> str:
    """The text of match ``m`` with each matched group replaced by ``fn(group)``."""
    out, pos = [], m.start()
    for i in range(1, (m.lastindex or 0) + 1):
        if m.group(i) is not None:
            out += [m.string[pos : m.start(i)], fn(m.group(i))]
            pos = m.end(i)
    return "".join(out) + m.string[pos : m.end()]


def _continue_tokens(response: dict) -> list[str]:
    tokens = []
    for obj in [response.get("body")] + [e.get("object") for e in response.get("events") or []]:
        if (
            isinstance(obj, dict)
            and isinstance(obj.get("metadata"), dict)
            and obj["metadata"].get("continue")
        ):
            tokens.append(obj["metadata"]["continue"])
    return tokens


def _time_word(m: re.Match) -> str:
    if m.group(1) == "2030" or m.group(0).startswith("2006-01-02T15:04:05"):
        return m.group(0)
    return "<microtime>" if m.group(2) else "<time>"


def _scrub(obj: Json, generated: dict[str, str]) -> None:
    """Replace, in place, what is secret or random by structure: the root CA, the server address; note generated names."""
    if isinstance(obj, list):
        for item in obj:
            _scrub(item, generated)
        return
    if not isinstance(obj, dict):
        return
    meta: dict = obj["metadata"] if isinstance(obj.get("metadata"), dict) else {}
    if (
        meta.get("name") == "kube-root-ca.crt"
        and isinstance(obj.get("data"), dict)
        and "ca.crt" in obj["data"]
    ):
        obj["data"]["ca.crt"] = "<ca.crt>"
    prefix, name = meta.get("generateName"), meta.get("name")
    if (
        prefix
        and isinstance(name, str)
        and name.startswith(prefix)
        and len(name) == len(prefix) + 5
    ):
        generated[name] = prefix + "<suffix>"
    for cidr in obj.get("serverAddressByClientCIDRs") or []:
        if isinstance(cidr, dict) and "serverAddress" in cidr:
            cidr["serverAddress"] = "<server-address>"
    for key in ("items",):
        _scrub(obj.get(key), generated)


# -- data scenarios ---------------------------------------------------------------------------------------

_REF = re.compile(r"\{\{([^{}]+)\}\}")


def _lookup(recorder: Recorder, ref: str) -> Json:
    """The value a ``{{step.path}}`` reference names in an earlier answer (``future-rv``: one beyond all seen)."""
    if ref == "future-rv":
        seen = [0]
        for answer in recorder.answers.values():
            _walk(
                answer.body,
                lambda k, v: (
                    seen.append(int(v))
                    if k == "resourceVersion" and isinstance(v, str) and v.isdigit()
                    else None
                ),
            )
        return str(max(seen) + 1_000_000)
    step, _, path = ref.partition(".")
    found = recorder.answers.get(step)
    if found is None:
        raise KeyError(f"{{{{{ref}}}}}: no earlier step {step!r}")
    value: Json = {"body": found.body, "events": found.events, "status": found.status}
    for part in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        try:
            value = value[int(part[1:-1])] if part.startswith("[") else value[part]
        except (KeyError, IndexError, TypeError):
            raise KeyError(f"{{{{{ref}}}}}: {step!r} answered no {path}") from None
    return value


def _resolve(recorder: Recorder, value: Json) -> Json:
    """``value`` with ``{{step.path}}`` references replaced and ``{"$copy": ..., "$merge": ...}`` built."""
    if isinstance(value, str):
        whole = _REF.fullmatch(value)
        if whole:
            return copy.deepcopy(_lookup(recorder, whole.group(1)))
        return _REF.sub(lambda m: str(_lookup(recorder, m.group(1))), value)
    if isinstance(value, list):
        return [_resolve(recorder, v) for v in value]
    if isinstance(value, dict):
        if "$copy" in value:
            source = value["$copy"]
            if isinstance(source, dict):
                base = recorder.get(_resolve(recorder, source["get"])).body
            else:
                base = copy.deepcopy(recorder.answers[source].body)
            return _merge_patch(base, _resolve(recorder, value.get("$merge", {})))
        return {k: _resolve(recorder, v) for k, v in value.items()}
    return value


def _merge_patch(target: Json, patch: Json) -> Json:
    """RFC 7386: ``patch`` applied to ``target`` (null removes a key)."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = _merge_patch(out.get(key), value)
    return out


def load_templates(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def play_template(recorder: Recorder, templates: list[dict]) -> None:
    """Play step templates, each a JSON object:

    ``step``, ``note``, ``request`` (``method``, ``path``, ``query``,
    ``headers``, ``body``, ``body_raw``, ``auth``, as in a transcript line),
    where any string may hold ``{{step.path}}`` (a value from an earlier
    answer, e.g. ``{{create.body.metadata.resourceVersion}}``; ``{{future-rv}}``
    is one far beyond every resourceVersion seen) and a body may be
    ``{"$copy": "step" | {"get": path}, "$merge": {...}}`` (an earlier answer,
    or a fresh unrecorded GET, with a JSON merge patch applied). Optional:
    ``before`` (a list of ``{"get": path, "until": condition}`` or
    ``{"do": "compact-etcd"}``), ``until``, ``keep``, ``summary``,
    ``verbatim`` (see :meth:`Recorder.request`); for a watch ``watch: true``,
    ``during: N`` (the next N templates run while it is open),
    ``wait_events``, ``stop_after`` and ``during_action: "restart-apiserver"``.
    """
    i = 0
    while i < len(templates):
        t = templates[i]
        during = templates[i + 1 : i + 1 + int(t.get("during", 0))]
        _before(recorder, t)
        req = _resolve(recorder, t["request"])
        if t.get("watch"):
            with recorder.watch(
                t["step"],
                req["path"],
                note=t["note"],
                query=req.get("query"),
                headers=req.get("headers"),
                auth=req.get("auth"),
                stop_after=t.get("stop_after"),
                wait_events=int(t.get("wait_events", 0)),
            ):
                for inner in during:
                    _play_one(recorder, inner)
                if t.get("during_action") == "restart-apiserver":
                    recorder.restart_apiserver()
                elif t.get("during_action"):
                    raise ValueError(f"{t['step']}: unknown during_action {t['during_action']!r}")
        else:
            _play_one(recorder, t, req)
        i += 1 + len(during)


def _before(recorder: Recorder, t: dict) -> None:
    for action in t.get("before", []):
        if action.get("do") == "compact-etcd":
            recorder.compact_etcd()
        elif "get" in action:
            recorder.wait(_resolve(recorder, action["get"]), action["until"])
        else:
            raise ValueError(f"{t['step']}: unknown 'before' action {action!r}")


def _play_one(recorder: Recorder, t: dict, req: dict | None = None) -> None:
    if req is None:
        _before(recorder, t)
        req = _resolve(recorder, t["request"])
    if t.get("watch"):
        raise ValueError(f"{t['step']}: a watch inside a watch's 'during' steps is not supported")
    recorder.request(
        t["step"],
        req["method"],
        req["path"],
        note=t["note"],
        query=req.get("query"),
        headers=req.get("headers"),
        body=req.get("body"),
        body_raw=bool(req.get("body_raw")),
        auth=req.get("auth"),
        until=t.get("until"),
        keep=t.get("keep"),
        summary=t.get("summary"),
        verbatim=bool(t.get("verbatim")),
    )


# -- the registry -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    """A named scenario: ``run(recorder)`` sends its requests. ``doc`` says what it shows."""

    name: str
    run: Callable[[Recorder], None]
    doc: str = ""


#: Every scenario, in recording order (one control plane records them in this order; some
#: scenarios leave state behind, and watch-expired restarts kube-apiserver, so it comes last).
SCENARIOS: dict[str, Scenario] = {}


def scenario(
    name: str, doc: str = ""
) -> Callable[[Callable[[Recorder], None]], Callable[[Recorder], None]]:
    """Register a scenario written as a function of a :class:`Recorder` (use a namespace ``tx-NAME`` of its own)."""

    def register(fn: Callable[[Recorder], None]) -> Callable[[Recorder], None]:
        if name in SCENARIOS:
            raise ValueError(f"scenario {name!r} is registered twice")
        SCENARIOS[name] = Scenario(name, fn, doc or (fn.__doc__ or "").strip())
        return fn

    return register


def _data_scenario(name: str) -> None:
    path = TEMPLATES / f"{name}.jsonl"
    SCENARIOS[name] = Scenario(
        name,
        lambda recorder: play_template(recorder, load_templates(path)),
        f"templates in {path.name}",
    )


for _name in (
    "discovery",
    "configmap-crud",
    "generation",
    "deployment-patches",
    "crd-validation",
    "lists-and-selectors",
    "watch-basics",
    "watch-selectors",
    "watch-list",
    "errors",
    "delete-semantics",
    "leases",
    "metadata-negotiation",
):
    _data_scenario(_name)

# New scenarios go here, before watch-expired: a template file registered with
# _data_scenario("name"), or a function:
#
#   @scenario("server-side-apply")
#   def _server_side_apply(r: Recorder) -> None:
#       r.request("create-namespace", "POST", "/api/v1/namespaces", note="...", body={...})
#       a = r.request("apply", "PATCH", ".../configmaps/cm1", note="...", query={"fieldManager": "me"},
#                     headers={"Content-Type": "application/apply-patch+yaml", "Accept": "application/json"}, body={...})
#       with r.watch("watch", ".../configmaps", note="...", query={"watch": "true", "resourceVersion":
#                    a.body["metadata"]["resourceVersion"], "timeoutSeconds": "2"}):
#           r.request("during-write", "PATCH", ..., note="(during the watch) ...")

_data_scenario("watch-expired")  # restarts kube-apiserver: keep it last


# -- the command ---------------------------------------------------------------------------------------------


def _control_plane_class() -> Any:
    """``ControlPlane`` from wherever the layout has it (imported lazily: the recorder must import without it)."""
    try:
        from pyinformers.testing.envtest import ControlPlane  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        from pyinformers.testing import ControlPlane  # type: ignore[attr-defined,no-redef,unused-ignore]
    return ControlPlane


def record(
    names: Sequence[str],
    out: Path | None,
    *,
    controllers: Sequence[str] = ("*",),
    log: Callable[[str], None] = print,
) -> Path:
    """Record ``names`` on one fresh control plane into ``out`` (default: by the server's version); the directory."""
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        raise SystemExit(
            f"unknown scenario(s): {', '.join(unknown)} (known: {', '.join(SCENARIOS)})"
        )
    chosen = (
        [s for s in SCENARIOS.values() if s.name in names] if names else list(SCENARIOS.values())
    )
    ControlPlane = _control_plane_class()
    # The API audience is the in-cluster default, not the control plane's own https://127.0.0.1:<port>
    # issuer: a TokenRequest answer lists it, and a random port would make every recording differ.
    with ControlPlane(
        controller_manager=True,
        controllers=tuple(controllers),
        apiserver_args=[f"--api-audiences={API_AUDIENCE}"],
    ) as cp:
        version = Recorder(cp).get("/version").body
        directory = out or DEFAULT_ROOT / version["gitVersion"]
        directory.mkdir(parents=True, exist_ok=True)
        log(
            f"recording {len(chosen)} scenario(s) on kube-apiserver {version['gitVersion']} ({version.get('goVersion')}) into {directory}"
        )
        for sc in chosen:
            began = time.monotonic()
            recorder = Recorder(cp)
            sc.run(recorder)
            lines = recorder.transcript()
            target = directory / f"{sc.name}.jsonl"
            target.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
            log(f"  {sc.name}: {len(lines)} steps in {time.monotonic() - began:.1f} s -> {target}")
    return directory


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.support.record_transcripts", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "scenarios",
        nargs="*",
        metavar="SCENARIO",
        help=f"scenarios to record (default: all: {', '.join(SCENARIOS)})",
    )
    parser.add_argument(
        "--out", type=Path, help="output directory (default: tests/transcripts/<server gitVersion>)"
    )
    parser.add_argument(
        "--controllers",
        default="*",
        help="kube-controller-manager's --controllers (default: '*', all its defaults)",
    )
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    args = parser.parse_args(argv)
    if args.list:
        for sc in SCENARIOS.values():
            print(f"{sc.name}: {sc.doc}")
        return 0
    record(args.scenarios, args.out, controllers=args.controllers.split(","))
    return 0


if __name__ == "__main__":
    sys.exit(main())
