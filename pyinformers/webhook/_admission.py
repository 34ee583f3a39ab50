"""Admission: what a handler is given, what it answers, and how a review is answered.

A validating or mutating handler is a function of one
:class:`AdmissionRequest`. It answers:

* ``None`` or :class:`Allowed` -- admit (a mutating handler's edits to
  ``request.object``, a copy, become the patch);
* :class:`Denied` -- refuse, with a message and a reason (the API server
  reports ``admission webhook "NAME" denied the request: MESSAGE``);
* (mutating only) an object -- admit it as changed: the library computes the
  RFC 6902 patch from the object sent to the one returned.

``request.warn(text)`` adds a warning, shown by kubectl and returned in the
API server's ``Warning`` header, whatever the answer.

:func:`review` turns an ``AdmissionReview`` request (a dict) into its
response for one registered :class:`AdmissionWebhook`. A handler that raises
or overruns its deadline is answered as its failure policy expects
(``Fail``: a denial with code 500 saying the webhook failed; ``Ignore``:
admitted unchanged, with a warning) and logged with the request's uid and the
exception's type and frames, never its message or the object (a Secret's data
must not reach a log).

Thread-safety: a request and its response are built per call; handlers run
one per review on a thread of their own (so a deadline can be kept) and must
be thread-safe when reviews run concurrently.
"""

from __future__ import annotations

import base64
import enum
import logging
import threading
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import orjson

from pyinformers.api import Resource
from pyinformers.api.meta import deep_copy
from pyinformers.webhook._patch import json_patch

__all__ = [
    "ADMISSION_V1",
    "AdmissionRequest",
    "AdmissionWebhook",
    "Allowed",
    "Denied",
    "Operation",
    "ReviewError",
    "UserInfo",
    "review",
]

_log = logging.getLogger("pyinformers.webhook")

#: The only AdmissionReview version served (the API server sends v1 first when offered).
ADMISSION_V1 = "admission.k8s.io/v1"

T = TypeVar("T", bound=Mapping[str, Any])


class Operation(str, enum.Enum):
    """The operation being admitted, as the API server names it."""

    CREATE = "CREATE"
    UPDATE = "UPDATE"
    DELETE = "DELETE"
    CONNECT = "CONNECT"

    def __str__(self) -> str:
        return self.value


class ReviewError(ValueError):
    """A review request the webhook cannot answer (malformed, unknown kind or version): a 400."""


@dataclass(frozen=True)
class UserInfo:
    """Who asks: the authenticated user the API server passes along."""

    username: str = ""
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Any) -> UserInfo:
        if not isinstance(data, Mapping):
            return cls()
        extra = data.get("extra") or {}
        return cls(
            username=str(data.get("username") or ""),
            uid=str(data.get("uid") or ""),
            groups=tuple(str(g) for g in data.get("groups") or ()),
            extra={str(k): tuple(str(x) for x in v or ()) for k, v in extra.items()}
            if isinstance(extra, Mapping)
            else {},
        )


@dataclass
class AdmissionRequest(Generic[T]):
    """One object's admission, as the handler sees it.

    ``object`` is the object being created or updated (None on DELETE),
    ``old_object`` the stored one on UPDATE and DELETE (None on CREATE). A
    mutating handler gets its own deep copy of ``object`` and may edit it in
    place. ``dry_run`` True means nothing will be persisted: a handler with
    side effects must not make them. ``raw`` is the review's whole
    ``request`` as sent.
    """

    uid: str
    operation: Operation
    resource: Resource
    sub_resource: str
    name: str
    namespace: str
    user_info: UserInfo
    object: T | None
    old_object: T | None
    dry_run: bool
    options: Mapping[str, Any] | None
    raw: Mapping[str, Any]
    warnings: list[str] = field(default_factory=list)

    def warn(self, text: str) -> None:
        """Add a warning to the answer (kubectl prints it; keep it one line, under 120 characters)."""
        self.warnings.append(" ".join(str(text).split()))


@dataclass(frozen=True)
class Allowed:
    """Admit (with warnings)."""

    warnings: Sequence[str] = ()


@dataclass(frozen=True)
class Denied:
    """Refuse: ``message`` is what the user reads; ``reason`` and ``code`` go into the status.

    The API server never reports a code below 400 for a denial (it raises
    such a code to 400); 403 Forbidden is what controller-runtime answers too.
    """

    message: str
    reason: str = "Forbidden"
    code: int = 403
    warnings: Sequence[str] = ()


Answer = Allowed | Denied | Mapping[str, Any] | None
Handler = Callable[[AdmissionRequest[Any]], Answer]

_OPERATIONS = tuple(op.value for op in Operation)
_SCOPES = ("Namespaced", "Cluster", "*")
_FAILURE_POLICIES = ("Fail", "Ignore")
_SIDE_EFFECTS = ("None", "NoneOnDryRun")  # admissionregistration/v1 allows no others


@dataclass(frozen=True)
class AdmissionWebhook:
    """One registered handler with everything its configuration entry says.

    ``mutating`` picks the Mutating- or ValidatingWebhookConfiguration.
    ``resources`` the rules cover (with ``sub_resource`` appended as
    ``plural/sub``), ``operations``, the failure policy, side effects, the
    timeout (1-30 s, 10 by default as on the API server), selectors and
    match conditions (CEL, evaluated by the API server) are copied into the
    generated configuration unchanged.
    """

    name: str
    handler: Handler
    mutating: bool
    resources: tuple[Resource, ...]
    operations: tuple[str, ...] = ("CREATE", "UPDATE")
    sub_resource: str = ""
    scope: str = "*"
    failure_policy: str = "Fail"
    side_effects: str = "None"
    timeout_seconds: int = 10
    namespace_selector: Mapping[str, Any] | None = None
    object_selector: Mapping[str, Any] | None = None
    match_conditions: tuple[Mapping[str, str], ...] = ()
    match_policy: str = "Equivalent"
    reinvocation_policy: str = "Never"

    def __post_init__(self) -> None:
        parts = self.name.split(".")
        if (
            len(parts) < 3
            or not all(parts)
            or self.name != self.name.lower()
            or len(self.name) > 253
        ):
            raise ValueError(
                f"webhook name {self.name!r} must be a lower-case DNS name of at least three segments"
            )
        if not self.resources:
            raise ValueError(f"webhook {self.name!r} covers no resource")
        for op in self.operations:
            if op not in _OPERATIONS and op != "*":
                raise ValueError(
                    f"webhook {self.name!r}: operation {op!r} is not one of {', '.join(_OPERATIONS)} or *"
                )
        if self.scope not in _SCOPES:
            raise ValueError(
                f"webhook {self.name!r}: scope {self.scope!r} is not one of {', '.join(_SCOPES)}"
            )
        if self.failure_policy not in _FAILURE_POLICIES:
            raise ValueError(
                f"webhook {self.name!r}: failure_policy {self.failure_policy!r} is not Fail or Ignore"
            )
        if self.side_effects not in _SIDE_EFFECTS:
            raise ValueError(
                f"webhook {self.name!r}: side_effects {self.side_effects!r} is not one of "
                f"{', '.join(_SIDE_EFFECTS)}"
            )
        if (
            isinstance(self.timeout_seconds, bool)
            or not isinstance(self.timeout_seconds, int)
            or not 1 <= self.timeout_seconds <= 30
        ):
            raise ValueError(
                f"webhook {self.name!r}: timeout_seconds must be 1-30, got {self.timeout_seconds!r}"
            )
        if self.match_policy not in ("Exact", "Equivalent"):
            raise ValueError(f"webhook {self.name!r}: match_policy must be Exact or Equivalent")
        if self.reinvocation_policy not in ("Never", "IfNeeded"):
            raise ValueError(
                f"webhook {self.name!r}: reinvocation_policy must be Never or IfNeeded"
            )
        if self.reinvocation_policy != "Never" and not self.mutating:
            raise ValueError(
                f"webhook {self.name!r}: only a mutating webhook has a reinvocation policy"
            )
        for condition in self.match_conditions:
            if set(condition) != {"name", "expression"}:
                raise ValueError(
                    f"webhook {self.name!r}: a match condition is {{'name': ..., 'expression': ...}}"
                )

    @property
    def path(self) -> str:
        """The URL path it is served on: ``/mutate/NAME`` or ``/validate/NAME``."""
        return f"/{'mutate' if self.mutating else 'validate'}/{self.name}"

    @property
    def deadline(self) -> float:
        """Seconds the handler may take: the timeout less a margin for the network, so we answer first."""
        return max(0.5, self.timeout_seconds * 0.9 - 0.2)


# --------------------------------------------------------------------------- reviews


def _resource_of(request: Mapping[str, Any], key: str, kind_key: str) -> Resource:
    gvr = request.get(key)
    gvk = request.get(kind_key)
    if not isinstance(gvr, Mapping) or not isinstance(gvk, Mapping):
        raise ReviewError(f"the AdmissionReview request has no {key} or {kind_key}")
    try:
        return Resource(
            str(gvr.get("group") or ""),
            str(gvr.get("version") or ""),
            str(gvr.get("resource") or ""),
            str(gvk.get("kind") or ""),
            namespaced=bool(request.get("namespace")),
        )
    except ValueError as err:
        raise ReviewError(f"the AdmissionReview request's {key} is malformed: {err}") from None


def parse_review(review_doc: Any) -> AdmissionRequest[Any]:
    """The request of an ``AdmissionReview`` v1 document; :class:`ReviewError` when it is not one."""
    if not isinstance(review_doc, Mapping):
        raise ReviewError("the body is not a JSON object")
    api_version, kind = review_doc.get("apiVersion"), review_doc.get("kind")
    if kind != "AdmissionReview":
        raise ReviewError(f"expected kind AdmissionReview, got {kind!r}")
    if api_version != ADMISSION_V1:
        raise ReviewError(
            f"AdmissionReview version {api_version!r} is not served (only {ADMISSION_V1})"
        )
    request = review_doc.get("request")
    if not isinstance(request, Mapping):
        raise ReviewError("the AdmissionReview has no request")
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        raise ReviewError("the AdmissionReview request has no uid")
    operation = request.get("operation")
    if operation not in _OPERATIONS:
        raise ReviewError(
            f"the AdmissionReview request's operation {operation!r} is not one of {', '.join(_OPERATIONS)}"
        )
    obj, old = request.get("object"), request.get("oldObject")
    for what, value in (("object", obj), ("oldObject", old)):
        if value is not None and not isinstance(value, Mapping):
            raise ReviewError(f"the AdmissionReview request's {what} is not an object")
    return AdmissionRequest(
        uid=uid,
        operation=Operation(operation),
        resource=_resource_of(request, "resource", "kind"),
        sub_resource=str(request.get("subResource") or ""),
        name=str(request.get("name") or ""),
        namespace=str(request.get("namespace") or ""),
        user_info=UserInfo.from_dict(request.get("userInfo")),
        object=obj,
        old_object=old,
        dry_run=bool(request.get("dryRun")),
        options=request.get("options") if isinstance(request.get("options"), Mapping) else None,
        raw=request,
    )


def _frames(err: BaseException) -> str:
    """Where ``err`` was raised, without its message: ``ValueError at foo.py:12 in f <- ...``."""
    frames = traceback.extract_tb(err.__traceback__)[-4:]
    where = " <- ".join(
        f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno} in {f.name}" for f in reversed(frames)
    )
    return f"{type(err).__name__} at {where}" if where else type(err).__name__


class _Outcome:
    __slots__ = ("answer", "error")

    def __init__(self) -> None:
        self.answer: Answer = None
        self.error: BaseException | None = None


#: Seconds an idle handler thread waits for the next review before it ends.
_IDLE_EXIT = 1.0


class _Worker:
    """A reusable handler thread: takes one call at a time from its slot (a hand-off costs far less than a
    new thread, ~10 us against ~300 us here)."""

    def __init__(self, pool: _Pool) -> None:
        self._pool = pool
        self._ready = threading.Condition(threading.Lock())
        self._call: Callable[[], None] | None = None
        threading.Thread(target=self._loop, name="pyinformers-webhook-handler", daemon=True).start()

    def give(self, call: Callable[[], None]) -> None:
        with self._ready:
            self._call = call
            self._ready.notify()

    def _loop(self) -> None:
        while True:
            with self._ready:
                while self._call is None:
                    if (
                        not self._ready.wait(_IDLE_EXIT)
                        and self._call is None
                        and self._pool.retire(self)
                    ):
                        return  # idle for a while and nobody took us: end (tests see no lingering thread)
                call, self._call = self._call, None
            call()
            if not self._pool.back(self):
                return


class _Pool:
    """Idle workers; a handler stuck past its deadline keeps its worker, the next call gets another."""

    def __init__(self, keep: int = 32) -> None:
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._keep = keep

    def run(self, call: Callable[[], None]) -> None:
        with self._lock:
            worker = self._idle.pop() if self._idle else None
        (worker or _Worker(self)).give(call)

    def retire(self, worker: _Worker) -> bool:
        """Remove an idle ``worker``; False when a caller already took it (a call is on its way)."""
        with self._lock:
            if worker in self._idle:
                self._idle.remove(worker)
                return True
            return False

    def back(self, worker: _Worker) -> bool:
        with self._lock:
            if len(self._idle) >= self._keep:
                return False
            self._idle.append(worker)
            return True


_POOL = _Pool()


def _run(
    webhook: AdmissionWebhook, request: AdmissionRequest[Any], deadline: float | None
) -> _Outcome:
    """Call the handler, on a pooled thread when a deadline must be kept; a timeout is a TimeoutError."""
    outcome = _Outcome()
    done = threading.Event()

    def call() -> None:
        try:
            outcome.answer = webhook.handler(request)
        except BaseException as err:  # noqa: B036 (a handler's SystemExit is a failure too, not our exit)
            outcome.error = err
        finally:
            done.set()

    if deadline is None:
        call()
        return outcome
    _POOL.run(call)
    if not done.wait(deadline):
        return _timed_out(deadline)
    return outcome


def _timed_out(deadline: float) -> _Outcome:
    late = _Outcome()
    late.error = TimeoutError(f"the handler took longer than {deadline:.1f} s")
    return late


def _response(
    uid: str,
    *,
    allowed: bool,
    warnings: Sequence[str] = (),
    status: dict | None = None,
    patch: list | None = None,
) -> dict[str, Any]:
    response: dict[str, Any] = {"uid": uid, "allowed": allowed}
    if status is not None:
        response["status"] = status
    if patch:
        response["patchType"] = "JSONPatch"
        response["patch"] = base64.b64encode(orjson.dumps(patch)).decode("ascii")
    if warnings:
        response["warnings"] = list(warnings)
    return {"apiVersion": ADMISSION_V1, "kind": "AdmissionReview", "response": response}


def _failed(
    webhook: AdmissionWebhook, request: AdmissionRequest[Any], err: BaseException
) -> dict[str, Any]:
    what = "timed out" if isinstance(err, TimeoutError) else "failed"
    _log.error(
        "webhook %s: the handler %s on request %s (%s %s): %s",
        webhook.name,
        what,
        request.uid,
        request.operation.value,
        request.resource.group_resource,
        f"no answer within {webhook.deadline:.1f} s" if what == "timed out" else _frames(err),
    )
    message = f"the webhook's handler {what} (request {request.uid})"
    if webhook.failure_policy == "Ignore":
        return _response(
            request.uid,
            allowed=True,
            warnings=[*request.warnings, f"{webhook.name}: {message}; ignored"],
        )
    return _response(
        request.uid,
        allowed=False,
        warnings=request.warnings,
        status={"code": 500, "reason": "InternalError", "message": message},
    )


def review(
    webhook: AdmissionWebhook,
    review_doc: Any,
    *,
    deadline: float | None = None,
    inline: bool = False,
) -> dict[str, Any]:
    """The ``AdmissionReview`` answering ``review_doc`` with ``webhook``'s handler.

    ``deadline`` is the seconds the handler may run (default: the webhook's
    :attr:`~AdmissionWebhook.deadline`); ``inline`` runs it on the calling
    thread instead, without a deadline (a handler that hangs then hangs the call).
    Raises :class:`ReviewError` for a request that is not a v1
    AdmissionReview (the server answers 400); everything the handler does,
    raising included, becomes a response.
    """
    request = parse_review(review_doc)
    original = request.object
    if webhook.mutating and original is not None:
        request.object = deep_copy(original)
    outcome = _run(
        webhook, request, None if inline else webhook.deadline if deadline is None else deadline
    )
    if outcome.error is not None:
        return _failed(webhook, request, outcome.error)
    answer = outcome.answer
    if isinstance(answer, Denied):
        code = (
            answer.code
            if isinstance(answer.code, int) and not isinstance(answer.code, bool)
            else 403
        )
        return _response(
            request.uid,
            allowed=False,
            warnings=[*request.warnings, *answer.warnings],
            status={"code": code, "reason": str(answer.reason), "message": str(answer.message)},
        )
    warnings = list(request.warnings)
    if isinstance(answer, Allowed):
        warnings.extend(answer.warnings)
        answer = None
    elif answer is not None and not isinstance(answer, Mapping):
        return _failed(
            webhook, request, TypeError(f"the handler returned a {type(answer).__name__}")
        )
    patch: list | None = None
    if webhook.mutating and original is not None:
        mutated = request.object if answer is None else answer
        patch = json_patch(original, mutated)
    elif answer is not None:
        return _failed(webhook, request, TypeError("a validating handler returned an object"))
    return _response(request.uid, allowed=True, warnings=warnings, patch=patch)
