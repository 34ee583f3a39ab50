"""Replay recorded kube-apiserver transcripts against the in-process server.

A transcript is a JSON Lines file: one line per request a recorder sent to a
real kube-apiserver and the answer it got, normalised so that two recordings
compare equal (uids, resourceVersions and continue tokens become numbered
placeholders such as ``<rv:3>``; timestamps become ``<time>``). The format is
described in ``tests/transcripts/README.md``; the recorder is
:mod:`tests.support.record_transcripts`.

:func:`replay` sends every request of a file, in order, over real HTTP to a
fresh :class:`~pyinformers.testing.ApiServer` and compares each answer with
the recorded one after the same normalisation:

* status code and Content-Type; bodies field by field (a field present on
  one side only is a difference); ``managedFields`` are not compared;
* placeholders by **identity and order**: the first time ``<rv:N>`` meets a
  value it is bound to it; later, the same N must meet the same value, a
  different N a different value, and resourceVersions must be ordered as
  their N are (a higher N is a later version);
* watches: event types and objects in order; a run of BOOKMARK events counts
  as one (the real server sends "one or more"); the streams the recorder
  ended itself are read to the same number of events;
* ``status.conditions`` and ``details.causes`` as multisets (the real server
  orders them differently from run to run), and so the causes a Status
  ``message`` quotes.

Placeholders in requests are replaced by the values bound to them; a
resourceVersion no answer has shown yet (a "future" one) becomes one far
beyond any seen. Requests carry the server's bearer token unless the line's
``request.auth`` says otherwise.

Time: the server runs on a :class:`~pyinformers.clock.FakeClock`, so a watch
with ``timeoutSeconds`` ends when the replayer steps the clock, after the
steps recorded "(during the watch)" have run: a minute-long recorded watch
replays in milliseconds. What the recorder waited for out of band (the
garbage collector acting, a compaction, a restart) is modelled: the replayer
waits for the server's garbage collector to be idle before every step, and
:data:`OUT_OF_BAND` names the steps before which it compacts or restarts.

Differences are returned, not raised: :class:`StepResult` per step.
Thread-safety: one replay per server; replays of different files are independent.
"""

from __future__ import annotations

import http.client
import itertools
import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pyinformers.clock import FakeClock

__all__ = [
    "Step",
    "StepResult",
    "Bindings",
    "load",
    "compare",
    "replay",
    "transcript_files",
    "OUT_OF_BAND",
    "WATCH_SPANS",
]

_PLACEHOLDER = re.compile(
    r"<(rv|uid|continue):(\d+)>|<(time|microtime|suffix|ca\.crt|token|server-address|hash)>"
)
_TIME = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"
_MICROTIME = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z"
_FREE = {
    "time": _TIME,
    "microtime": _MICROTIME,
    "suffix": r"[a-z0-9]{5}",
    "ca.crt": r"(?s:.+)",
    "token": r"[A-Za-z0-9._-]+",
    "server-address": r".+",
    "hash": r"[A-Za-z0-9]+",
}
_ELIDED = re.compile(r"<(\d+) x '(.)' \([^)]*\); elided by the recorder>")
_UNORDERED = ("conditions", "causes")
_WATCH_STEP_PREFIX = "(during the watch"
_TRIMMED = "trimmed by the recorder"

#: What the recorder did out of band before a step, as (file stem, step) -> action
#: name; the action is a method of the replayer (``compact``, ``restart``).
OUT_OF_BAND: dict[tuple[str, str], str] = {
    ("lists-and-selectors", "exact-after-compaction"): "compact",
    ("watch-expired", "watch-across-restart"): "restart_during_watch",
}


#: Watches whose "during the watch" steps are not marked in their notes: (file stem,
#: step) -> how many of the following steps ran while the watch was open.
WATCH_SPANS: dict[tuple[str, str], int] = {
    ("delete-semantics", "fg-watch"): 5,  # "open during the foreground deletion steps below"
}


@dataclass(frozen=True)
class Step:
    """One line of a transcript."""

    file: str
    index: int
    name: str
    note: str
    request: dict
    response: dict

    @property
    def is_watch(self) -> bool:
        return "events" in self.response

    @property
    def during_watch(self) -> bool:
        return self.note.startswith(_WATCH_STEP_PREFIX)


@dataclass
class StepResult:
    """The outcome of one step: the differences found (empty when it matched)."""

    step: Step
    differences: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.differences


def transcript_files(directory: str | Path) -> list[Path]:
    """Every ``*.jsonl`` file under ``directory`` (one level of version directories), sorted."""
    root = Path(directory)
    return sorted(root.glob("*.jsonl")) + sorted(root.glob("*/*.jsonl"))


def load(path: str | Path) -> list[Step]:
    path = Path(path)
    steps = []
    with path.open(encoding="utf-8") as f:
        for index, line in enumerate(f):
            if not line.strip():
                continue
            data = json.loads(line)
            steps.append(
                Step(
                    path.stem,
                    index,
                    data["step"],
                    data.get("note", ""),
                    data["request"],
                    data["response"],
                )
            )
    return steps


class Bindings:
    """Placeholder values, bound on first meeting, compared by identity and order."""

    def __init__(self) -> None:
        self.values: dict[tuple[str, int], str] = {}
        self.free: dict[str, str] = {}
        self.weak: set[int] = set()  # rv placeholders first met as a "current revision"
        #: set by the replayer for steps where writes the transcript does not show (a
        #: controller's) are documented to make resourceVersions differ: rvs bind weakly
        self.lenient = False

    def bind(self, kind: str, number: int, actual: str, *, weak: bool = False) -> str | None:
        """Bind ``<kind:number>`` to ``actual``; returns a description of a mismatch, or None.

        ``weak`` marks a resourceVersion that is the store's *current* revision
        (a list's, or the start of a watch cache): on the recorded cluster its
        own background writes (kube-apiserver renews its lease every 10 s) can
        move that revision past the last write the transcript shows, so it may
        equal a neighbouring placeholder's value here; order is still checked.
        """
        key = (kind, number)
        bound = self.values.get(key)
        if bound is not None:
            return None if bound == actual else f"<{kind}:{number}> was {bound!r}, now {actual!r}"
        lenient = kind == "rv" and (
            weak
            or any(n in self.weak for (k, n), v in self.values.items() if k == "rv" and v == actual)
        )
        for (k, n), value in self.values.items():
            if k == kind and value == actual and not lenient:
                return f"{actual!r} is both <{kind}:{n}> and <{kind}:{number}>"
        if kind == "rv":
            try:
                mine = int(actual)
            except ValueError:
                return f"<rv:{number}> met {actual!r}, not an integer"
            for (k, n), value in self.values.items():
                if k != "rv" or int(value) == mine and lenient:
                    continue
                if (n < number) != (int(value) < mine):
                    return f"<rv:{number}>={actual} is out of order with <rv:{n}>={value}"
            if weak:
                self.weak.add(number)
        self.values[key] = actual
        return None

    def substitute(self, text: str) -> str:
        """``text`` with every placeholder replaced by its bound value (or a plausible one)."""

        def one(match: re.Match) -> str:
            kind, number, free = match.group(1), match.group(2), match.group(3)
            if free is not None:
                return self.free.get(
                    free,
                    {
                        "time": "2030-01-01T00:00:00Z",
                        "microtime": "2030-01-01T00:00:00.000000Z",
                    }.get(free, ""),
                )
            value = self.values.get((kind, int(number)))
            if value is not None:
                return value
            if kind == "rv":
                seen = sorted((n, int(v)) for (k, n), v in self.values.items() if k == "rv")
                earlier = [v for n, v in seen if n < int(number)]
                if self.lenient and earlier:
                    # made by a write the server did not make (documented): the state before it
                    return str(earlier[-1])
                # a resourceVersion no answer showed: beyond every one seen
                return str(max((v for _, v in seen), default=0) + 1_000_000)
            if kind == "uid":  # a made-up uid (a precondition that must not match): any fresh one
                value = str(uuid.uuid4())
                self.values[(kind, int(number))] = value
                return value
            raise KeyError(f"<{kind}:{number}> is used in a request before any answer showed it")

        return _PLACEHOLDER.sub(one, text)

    def substitute_json(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.substitute(value)
        if isinstance(value, list):
            return [self.substitute_json(v) for v in value]
        if isinstance(value, dict):
            return {self.substitute(k): self.substitute_json(v) for k, v in value.items()}
        return value


def _without_managed_fields(body: Any) -> Any:
    """A request body without ``metadata.managedFields``: their times were normalised away, so the
    recorded entries cannot be sent back as they were (and answers' entries are not compared)."""
    if (
        isinstance(body, dict)
        and isinstance(body.get("metadata"), dict)
        and "managedFields" in body["metadata"]
    ):
        return dict(
            body, metadata={k: v for k, v in body["metadata"].items() if k != "managedFields"}
        )
    return body


def _match_string(expected: str, actual: Any, bindings: Bindings, weak: bool = False) -> str | None:
    weak = weak or bindings.lenient
    if not isinstance(actual, str):
        return f"expected a string like {expected!r}, got {actual!r}"
    if "<" not in expected or not _PLACEHOLDER.search(expected):
        return None if expected == actual else f"expected {expected!r}, got {actual!r}"
    pattern: list[str] = []
    groups: list[tuple[str, str]] = []
    pos = 0
    for m in _PLACEHOLDER.finditer(expected):
        pattern.append(re.escape(expected[pos : m.start()]))
        if m.group(3) is not None:
            pattern.append(f"({_FREE[m.group(3)]})")
            groups.append(("free", m.group(3)))
        else:
            pattern.append(r"(\d+)" if m.group(1) == "rv" else r"(.+?)")
            groups.append((m.group(1), m.group(2)))
        pos = m.end()
    pattern.append(re.escape(expected[pos:]))
    found = re.fullmatch("".join(pattern), actual)
    if found is None:
        return f"expected {expected!r}, got {actual!r}"
    for (kind, number), value in zip(groups, found.groups()):
        if kind == "free":
            bindings.free.setdefault(number, value)
            continue
        problem = bindings.bind(kind, int(number), value, weak=weak)
        if problem:
            return problem
    return None


def _is_current_revision(path: str, context: Any) -> bool:
    """Paths whose resourceVersion is the store's current revision rather than an object's.

    A list's ``metadata.resourceVersion``, and those in Status messages
    (``too old resource version: A (B)``, ``current: C``).
    """
    if path.endswith(".message"):
        return True
    return (
        path == "body.metadata.resourceVersion" and isinstance(context, dict) and "items" in context
    )


def _sort_key(item: Any) -> str:
    return json.dumps(item, sort_keys=True)


def _cause_orders(message: str, body: Any) -> Iterator[str]:
    """``message`` with the causes it quotes (``[field: why, field: why]``) in every other order.

    A Status message lists its causes in the order the server found them,
    which varies from run to run as ``details.causes`` does (both come from
    one map iteration); the message is compared as the causes are, as a
    multiset.
    """
    details = body.get("details") if isinstance(body, dict) else None
    causes = details.get("causes") if isinstance(details, dict) else None
    if not isinstance(causes, list) or not 1 < len(causes) <= 5:
        return
    parts = [f"{c.get('field')}: {c.get('message')}" for c in causes if isinstance(c, dict)]
    quoted = "[" + ", ".join(parts) + "]"
    if quoted not in message:
        return
    for order in itertools.permutations(parts):
        variant = "[" + ", ".join(order) + "]"
        if variant != quoted:
            yield message.replace(quoted, variant)


def compare(
    expected: Any, actual: Any, bindings: Bindings, path: str = "", context: Any = None
) -> list[str]:
    """The differences between a recorded value and an actual one (``path: what``).

    ``context`` is the recorded top-level body (lists and Status bodies carry
    current revisions; see :meth:`Bindings.bind`).
    """
    where = path or "."
    if isinstance(expected, str):
        weak = _is_current_revision(path, context)
        problem = _match_string(expected, actual, bindings, weak)
        if problem and path == "body.message":
            for variant in _cause_orders(expected, context):
                if _match_string(variant, actual, bindings, weak) is None:
                    return []
        return [f"{where}: {problem}"] if problem else []
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{where}: expected an object, got {actual!r:.200}"]
        diffs = []
        for key in expected:
            if key == "managedFields":
                continue
            if key not in actual:
                diffs.append(f"{path}.{key}: missing (expected {json.dumps(expected[key])[:200]})")
            else:
                diffs.extend(
                    compare(expected[key], actual[key], bindings, f"{path}.{key}", context)
                )
        for key in actual:
            if key not in expected and key != "managedFields":
                diffs.append(f"{path}.{key}: unexpected (got {json.dumps(actual[key])[:200]})")
        return diffs
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return [f"{where}: expected a list, got {actual!r:.200}"]
        if len(expected) != len(actual):
            got = [a.get("type") for a in actual] if path == "events" else json.dumps(actual)[:400]
            return [f"{where}: expected {len(expected)} items, got {len(actual)}: {got}"]
        if path.rsplit(".", 1)[-1] in _UNORDERED:
            expected = sorted(expected, key=_sort_key)
            actual = sorted(actual, key=_sort_key)
        diffs = []
        for i, (e, a) in enumerate(zip(expected, actual)):
            diffs.extend(compare(e, a, bindings, f"{path}[{i}]", context))
        return diffs
    if expected != actual or type(expected) is not type(actual):
        return [f"{where}: expected {expected!r}, got {actual!r:.200}"]
    return []


def _entry_name(entry: Any) -> Any:
    if not isinstance(entry, dict):
        return None
    for key in ("name", "resource", "groupVersion", "version"):
        if isinstance(entry.get(key), str):
            return entry[key]
    meta = entry.get("metadata")
    return meta.get("name") if isinstance(meta, dict) else None


def _trim_like(expected: Any, actual: Any) -> Any:
    """``actual`` with the list entries the recorder left out of ``expected`` removed (by name), recursively.

    For answers the recorder trimmed (its note says so): the recorded entries
    must all be there, as recorded; the others are not compared.
    """
    if isinstance(expected, dict) and isinstance(actual, dict):
        return {k: _trim_like(expected[k], v) if k in expected else v for k, v in actual.items()}
    if isinstance(expected, list) and isinstance(actual, list):
        names = [_entry_name(e) for e in expected]
        if names and all(n is not None for n in names):
            by_name = {_entry_name(a): a for a in actual}
            kept = [a for a in actual if _entry_name(a) in names]
            if len(kept) == len(expected):
                return [
                    _trim_like(e, by_name[_entry_name(e)]) if _entry_name(e) in by_name else a
                    for e, a in zip(expected, kept)
                ]
            return kept
        if len(expected) == len(actual):
            return [_trim_like(e, a) for e, a in zip(expected, actual)]
    return actual


def _collapse_bookmarks(events: list[dict]) -> list[dict]:
    """Events with every run of BOOKMARKs reduced to its last one."""
    out: list[dict] = []
    for event in events:
        if out and event.get("type") == "BOOKMARK" and out[-1].get("type") == "BOOKMARK":
            out[-1] = event
        else:
            out.append(event)
    return out


class _Replayer:
    def __init__(self, server: Any, clock: FakeClock, token: str | None, timeout: float) -> None:
        self.server = server
        self.clock = clock
        self.token = token
        self.timeout = timeout
        self.bindings = Bindings()
        self.lenient_rv: Callable[[Step], bool] | None = None
        self.host, self.port = "127.0.0.1", server.port

    # -- out-of-band actions ------------------------------------------------------------

    def compact(self) -> None:
        self.server.compact()

    def restart_during_watch(self) -> None:
        self.server.restart()

    # -- requests ----------------------------------------------------------------------------

    def _headers(self, step: Step) -> dict:
        headers = dict(step.request.get("headers") or {})
        auth = step.request.get("auth")
        if auth is None and self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        elif auth == "invalid-token":
            headers["Authorization"] = "Bearer not-a-valid-token"
        elif auth == "admin-token-lowercase-bearer" and self.token:
            headers["Authorization"] = f"bearer {self.token}"
        elif auth == "serviceaccount-token":
            headers["Authorization"] = f"Bearer {self.bindings.free.get('token', '')}"
        return headers

    def _target(self, step: Step) -> str:
        path = self.bindings.substitute(step.request["path"])
        query = step.request.get("query") or {}
        if query:
            path += "?" + "&".join(
                f"{quote(k, safe='')}={quote(self.bindings.substitute(str(v)), safe='')}"
                for k, v in query.items()
            )
        return path

    def _body(self, step: Step) -> bytes | None:
        body = step.request.get("body")
        if body is None:
            return None
        if step.request.get("body_raw"):
            return str(body).encode()
        return json.dumps(_without_managed_fields(self.bindings.substitute_json(body))).encode()

    def _elided_body(self, step: Step) -> bytes | None:
        """The two bodies the recorder elided (too large to record), rebuilt from the note."""
        body = step.request.get("body")
        if not isinstance(body, dict):
            return None
        text = json.dumps(body)
        m = _ELIDED.search(text)
        if not m:
            return None
        filler = m.group(2) * int(m.group(1))
        return text.replace(m.group(0), filler).encode()

    def _connect(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)

    def request(self, step: Step) -> tuple[int, str, Any, list[str]]:
        conn = self._connect()
        try:
            body = self._elided_body(step) or self._body(step)
            conn.putrequest(step.request["method"], self._target(step), skip_accept_encoding=True)
            for key, value in self._headers(step).items():
                conn.putheader(key, value)
            if body is not None:
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body)
            resp = conn.getresponse()
            raw = resp.read()
            warnings = resp.headers.get_all("Warning") or []
            ctype = resp.headers.get("Content-Type", "")
            # JSON by content type, or where the recording has a JSON body sent as text (/openapi/v3)
            wants_json = ctype.startswith("application/json") or isinstance(
                step.response.get("body"), (dict, list)
            )
            try:
                parsed: Any = json.loads(raw) if wants_json else raw.decode()
            except ValueError:
                parsed = raw.decode(errors="replace")
            return resp.status, ctype, parsed, warnings
        finally:
            conn.close()

    # -- comparison ----------------------------------------------------------------------------

    def check_plain(self, step: Step) -> list[str]:
        status, ctype, body, warnings = self.request(step)
        return self._check_answer(step, status, ctype, body, warnings)

    def _check_answer(
        self, step: Step, status: int, ctype: str, body: Any, warnings: list[str]
    ) -> list[str]:
        expected = step.response
        diffs = []
        if status != expected["status"]:
            diffs.append(f"status: expected {expected['status']}, got {status}")
        if ctype.split(";")[0] != (expected.get("content_type") or "").split(";")[0]:
            diffs.append(f"content_type: expected {expected.get('content_type')!r}, got {ctype!r}")
        exp_body = expected.get("body")
        if isinstance(exp_body, dict) and "recorder_summary" in exp_body:
            if not isinstance(body, dict):
                diffs.append(f"body: expected a JSON document, got {str(body)[:200]!r}")
        else:
            if _TRIMMED in step.note:
                body = _trim_like(exp_body, body)
            diffs.extend(compare(exp_body, body, self.bindings, "body", exp_body))
        diffs.extend(compare(expected.get("warnings", []), warnings, self.bindings, "warnings"))
        return diffs

    def check_watch(
        self,
        step: Step,
        during: list[Step],
        results: list[StepResult],
        oob: Callable[[], None] | None,
    ) -> list[str]:
        expected = step.response
        stopped = re.fullmatch(r"client stopped after (\d+) events", expected.get("stream_end", ""))
        limit = int(stopped.group(1)) if stopped else None
        events: list[dict] = []
        started = threading.Event()
        outcome: dict[str, Any] = {}

        def read() -> None:
            conn = self._connect()
            try:
                conn.putrequest("GET", self._target(step), skip_accept_encoding=True)
                for key, value in self._headers(step).items():
                    conn.putheader(key, value)
                conn.endheaders()
                resp = conn.getresponse()
                outcome["status"] = resp.status
                outcome["ctype"] = resp.headers.get("Content-Type", "")
                started.set()
                while limit is None or len(events) < limit:
                    line = resp.readline()
                    if not line:
                        outcome["end"] = "closed by server"
                        break
                    if line.strip():
                        events.append(json.loads(line))
                else:
                    outcome["end"] = f"client stopped after {limit} events"
            except Exception as exc:  # noqa: BLE001 - reported as a difference
                outcome["error"] = repr(exc)
            finally:
                started.set()
                conn.close()

        reader = threading.Thread(target=read, name="transcript-watch-reader", daemon=True)
        reader.start()
        started.wait(self.timeout)
        self.server_registered_watch()
        for inner in during:
            self.wait_background()
            self.bindings.lenient = bool(self.lenient_rv and self.lenient_rv(inner))
            results.append(StepResult(inner, self.check_plain(inner)))
        self.wait_background()
        if oob is not None:
            oob()
        timeout = (step.request.get("query") or {}).get("timeoutSeconds")
        if limit is None and timeout:
            # Past the watch's deadline; then keep time moving until the server has ended
            # the stream (its serving thread may be between reading the clock and waiting).
            self.clock.step(float(timeout) + 1)
            deadline = time.monotonic() + self.timeout
            while reader.is_alive() and time.monotonic() < deadline:
                reader.join(0.005)
                self.clock.step(1.0)
        reader.join(self.timeout)
        diffs = []
        if reader.is_alive():
            diffs.append(f"the watch did not end (read {len(events)} events)")
        if "error" in outcome:
            diffs.append(f"watch failed: {outcome['error']}")
        if outcome.get("status") != expected["status"]:
            diffs.append(f"status: expected {expected['status']}, got {outcome.get('status')}")
        if outcome.get("end") and outcome["end"] != expected.get("stream_end"):
            diffs.append(
                f"stream_end: expected {expected.get('stream_end')!r}, got {outcome['end']!r}"
            )
        diffs.extend(
            compare(
                _collapse_bookmarks(expected["events"]),
                _collapse_bookmarks(events),
                self.bindings,
                "events",
            )
        )
        return diffs

    def server_registered_watch(self) -> None:
        """Wait until the server holds the watch open (its stream has started)."""
        # The reader saw the response headers, which the server sends after registering the watcher.

    def wait_background(self) -> None:
        """Wait (bounded) until the server's garbage collector has nothing left to do."""
        deadline = time.monotonic() + self.timeout
        while not self.server.gc_idle() and time.monotonic() < deadline:
            time.sleep(0.001)


def _groups(steps: list[Step]) -> Iterator[tuple[Step, list[Step]]]:
    """Each step with the steps recorded while it (a watch) was open."""
    i = 0
    while i < len(steps):
        step = steps[i]
        during = []
        if step.is_watch:
            j = i + 1
            span = WATCH_SPANS.get((step.file, step.name))
            while j < len(steps) and (steps[j].during_watch if span is None else j <= i + span):
                during.append(steps[j])
                j += 1
            i = j
        else:
            i += 1
        yield step, during


def replay(
    path: str | Path,
    *,
    server_factory: Callable[[FakeClock], Any] | None = None,
    timeout: float = 10.0,
    lenient_rv: Callable[[Step], bool] | None = None,
) -> list[StepResult]:
    """Replay one transcript file against a fresh server; one result per step, in file order.

    ``server_factory(clock)`` returns a started server (default: an
    :class:`~pyinformers.testing.ApiServer` with a token, on ``clock``);
    it is stopped at the end. ``lenient_rv(step)`` says for which steps a
    resourceVersion may equal a neighbouring placeholder's (writes the
    transcript shows but the server does not make, such as a controller's).
    """
    from pyinformers.testing.apiserver._server import ApiServer

    clock = FakeClock()
    token = "transcript-admin-token"
    if server_factory is None:
        server = ApiServer(token=token, clock=clock, namespace_defaults=True).start()
    else:
        server = server_factory(clock)
        token = server.token
    steps = load(path)
    stem = Path(path).stem
    results: list[StepResult] = []
    try:
        replayer = _Replayer(server, clock, token, timeout)
        replayer.lenient_rv = lenient_rv
        for step, during in _groups(steps):
            replayer.wait_background()
            replayer.bindings.lenient = bool(lenient_rv and lenient_rv(step))
            action = OUT_OF_BAND.get((stem, step.name))
            oob = getattr(replayer, action) if action else None
            try:
                if step.is_watch:
                    result = StepResult(step)
                    results.append(result)
                    result.differences = replayer.check_watch(
                        step, during, results, oob if action == "restart_during_watch" else None
                    )
                    if oob is not None and action != "restart_during_watch":
                        oob()
                else:
                    if oob is not None:
                        oob()
                    results.append(StepResult(step, replayer.check_plain(step)))
            except (OSError, KeyError, http.client.HTTPException) as exc:
                results.append(StepResult(step, [f"request failed: {exc!r}"]))
    finally:
        server.stop()
    results.sort(key=lambda r: r.step.index)
    return results


def summarize(results: Iterable[StepResult]) -> str:
    lines = []
    for result in results:
        if not result.ok:
            lines.append(f"{result.step.file}:{result.step.name}:")
            lines.extend(f"    {d}" for d in result.differences)
    return "\n".join(lines)
