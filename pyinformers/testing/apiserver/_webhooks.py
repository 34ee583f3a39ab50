"""The embedded API server calls admission and conversion webhooks, as kube-apiserver does.

:class:`WebhookDispatcher` reads the ``MutatingWebhookConfiguration`` and
``ValidatingWebhookConfiguration`` objects the server stores and, for a
write, calls every webhook whose rules match, over HTTPS with the
configuration's ``caBundle``:

* **matching**: a rule matches on API group, version, resource (``plural``,
  ``*``, ``plural/sub``, ``*/sub``, ``plural/*``, ``*/*``), operation and
  scope (``Namespaced``, ``Cluster``, ``*``); then the ``namespaceSelector``
  (the namespace's labels; a Namespace's own; every other cluster-scoped
  object matches) and the ``objectSelector`` (the new or the old object's
  labels);
* **order**: mutating webhooks first, configurations by name and webhooks in
  their listed order, each patch applied before the next call; a webhook
  with ``reinvocationPolicy: IfNeeded`` is called once more when a later one
  changed the object; then the validating webhooks (the real server calls
  those in parallel; here in order, the outcome is the same);
* **answers**: a denial is ``admission webhook "NAME" denied the request:
  MESSAGE`` with the webhook's code (at least 400); a call that fails (no
  connection, timeout, not a review, a uid that does not match) is a 500
  ``Internal error occurred: failed calling webhook "NAME": ...`` under
  ``failurePolicy: Fail`` and skipped under ``Ignore``; a dry-run request to
  a webhook with side effects is a 400 ``admission webhook "NAME" does not
  support dry run``; warnings are added to the answer's ``Warning`` headers;
* **conversion** (:meth:`WebhookDispatcher.convert`): a CRD with
  ``conversion.strategy: Webhook`` has objects converted by its webhook in
  one ``ConversionReview`` per read, list or watch event.

``matchConditions`` are CEL expressions over ``object``, ``oldObject`` and
``request``, evaluated with the CRD rules' CEL library (all true: called; one
false: skipped; an error: a failed call).

What it does not do (stated in docs/webhooks.rst): ``authorizer`` in a match
condition; ``matchPolicy: Equivalent`` converting a request to another version
a rule names; reaching a ``service`` client config (there is no cluster
network: the call fails); admission of the server's own background writes
(garbage collection, namespace cleanup).

Thread-safety: calls run on the request's thread, outside the store's
lock; the connection pool is guarded by its own lock.
"""

from __future__ import annotations

import base64
import http.client
import ssl
import threading
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import orjson

from pyinformers.api import as_label_selector
from pyinformers.testing.apiserver._patch import PatchError, json_patch
from pyinformers.testing.apiserver._status import StatusError, bad_request, go_quote

__all__ = ["Attributes", "WebhookDispatcher"]

MUTATING_KEY = "admissionregistration.k8s.io/mutatingwebhookconfigurations"
VALIDATING_KEY = "admissionregistration.k8s.io/validatingwebhookconfigurations"

_OPTIONS_KIND = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}


@dataclass
class Attributes:
    """One request's admission attributes (what kube-apiserver's ``admission.Attributes`` carry)."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    operation: str
    namespace: str
    name: str
    subresource: str = ""
    user: str = "admin"
    groups: tuple[str, ...] = ("system:masters", "system:authenticated")
    dry_run: bool = False
    options: dict[str, Any] | None = None
    warnings: list[str] = field(default_factory=list)


class _CallFailed(Exception):
    """The webhook could not be called or gave no usable answer (its failure policy decides)."""


def _internal(message: str) -> StatusError:
    return StatusError(
        500,
        "InternalError",
        f"Internal error occurred: {message}",
        details={"causes": [{"message": message}]},
    )


class _Pool:
    """Idle HTTPS connections per (host, port, CA bundle), reused for the next call."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: dict[tuple[str, int, str], list[http.client.HTTPSConnection]] = {}
        self._contexts: dict[str, ssl.SSLContext] = {}

    def _context(self, ca_bundle: str) -> ssl.SSLContext:
        with self._lock:
            context = self._contexts.get(ca_bundle)
            if context is None:
                context = ssl.create_default_context()
                if ca_bundle:
                    context.load_verify_locations(
                        cadata=base64.b64decode(ca_bundle).decode("ascii")
                    )
                self._contexts[ca_bundle] = context
            return context

    def post(self, url: str, ca_bundle: str, body: bytes, timeout: float) -> tuple[int, bytes]:
        parts = urlsplit(url)
        if parts.scheme != "https" or not parts.hostname:
            raise _CallFailed(f"the webhook URL {url!r} is not https://HOST[:PORT]/PATH")
        key = (parts.hostname, parts.port or 443, ca_bundle)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        with self._lock:
            idle = self._idle.get(key) or []
            conn = idle.pop() if idle else None
        for attempt in (0, 1):
            fresh = conn is None
            if conn is None:
                conn = http.client.HTTPSConnection(
                    parts.hostname,
                    parts.port or 443,
                    timeout=timeout,
                    context=self._context(ca_bundle),
                )
            try:
                conn.timeout = timeout
                if conn.sock is not None:
                    conn.sock.settimeout(timeout)
                conn.request(
                    "POST",
                    target,
                    body=body,
                    headers={"Content-Type": "application/json", "Accept": "application/json"},
                )
                response = conn.getresponse()
                data = response.read()
            except (OSError, http.client.HTTPException) as err:
                conn.close()
                conn = None
                if (
                    fresh or attempt
                ):  # a reused connection may have been closed by the server: retry once
                    what = (
                        "context deadline exceeded"
                        if isinstance(err, TimeoutError)
                        else _go_error(err, parts)
                    )
                    raise _CallFailed(f'failed to call webhook: Post "{url}": {what}') from None
                continue
            with self._lock:
                self._idle.setdefault(key, []).append(conn)
            return response.status, data
        raise AssertionError("unreachable")


def _go_error(err: BaseException, parts: Any) -> str:
    if isinstance(err, ConnectionRefusedError):
        return f"dial tcp {parts.hostname}:{parts.port or 443}: connect: connection refused"
    if isinstance(err, ssl.SSLCertVerificationError):
        return "tls: failed to verify certificate: x509: certificate signed by unknown authority"
    return " ".join(str(err).split()) or type(err).__name__


def _rule_matches(rule: dict, attrs: Attributes) -> bool:
    def has(values: Any, value: str) -> bool:
        return isinstance(values, list) and ("*" in values or value in values)

    if not (
        has(rule.get("apiGroups"), attrs.group)
        and has(rule.get("apiVersions"), attrs.version)
        and has(rule.get("operations"), attrs.operation)
    ):
        return False
    scope = rule.get("scope") or "*"
    if scope == "Namespaced" and not attrs.namespaced or scope == "Cluster" and attrs.namespaced:
        return False
    sub = attrs.subresource
    for resource in rule.get("resources") or ():
        plural, _, rule_sub = str(resource).partition("/")
        if plural not in ("*", attrs.plural):
            continue
        if (rule_sub or "") == sub or (rule_sub == "*" and resource != "*"):
            return True
    return False


def _labels(obj: dict | None) -> dict:
    return ((obj or {}).get("metadata") or {}).get("labels") or {}


@dataclass(frozen=True)
class _Hook:
    configuration: str
    spec: dict
    mutating: bool

    @property
    def name(self) -> str:
        return str(self.spec.get("name") or "")


class WebhookDispatcher:
    """Calls the configured webhooks (see the module docstring).

    :param configurations: ``storage key -> stored objects`` (the two configuration kinds).
    :param namespace: ``name -> the Namespace object`` or None.
    :param crd: ``crd name -> the CRD object`` or None.
    """

    def __init__(
        self,
        configurations: Callable[[str], Iterable[dict]],
        namespace: Callable[[str], dict | None],
        crd: Callable[[str], dict | None],
    ) -> None:
        self._configurations = configurations
        self._namespace = namespace
        self._crd = crd
        self._pool = _Pool()

    # -- admission ------------------------------------------------------------------------
    def _hooks(self, key: str, mutating: bool) -> list[_Hook]:
        configs = sorted(
            self._configurations(key),
            key=lambda c: str((c.get("metadata") or {}).get("name") or ""),
        )
        return [
            _Hook(str(c["metadata"]["name"]), w, mutating)
            for c in configs
            for w in c.get("webhooks") or ()
            if isinstance(w, dict)
        ]

    def active(self) -> bool:
        """Whether any webhook is configured (else writes skip admission entirely)."""
        return any(
            True for key in (MUTATING_KEY, VALIDATING_KEY) for _ in self._configurations(key)
        )

    def _matches(self, hook: _Hook, attrs: Attributes, obj: dict | None, old: dict | None) -> bool:
        if not any(
            _rule_matches(rule, attrs)
            for rule in hook.spec.get("rules") or ()
            if isinstance(rule, dict)
        ):
            return False
        selector = hook.spec.get("namespaceSelector")
        if selector:
            if attrs.namespaced:
                ns_obj = self._namespace(attrs.namespace) if attrs.namespace else None
                ns_labels = _labels(ns_obj)
            elif attrs.group == "" and attrs.plural == "namespaces":
                ns_labels = _labels(obj or old)
            else:
                ns_labels = None
            if ns_labels is not None and not as_label_selector(selector).matches(ns_labels):
                return False
        selector = hook.spec.get("objectSelector")
        if selector:
            wanted = as_label_selector(selector)
            if not (
                wanted.matches(_labels(obj)) or (old is not None and wanted.matches(_labels(old)))
            ):
                return False
        return True

    def _conditions_hold(
        self, hook: _Hook, attrs: Attributes, obj: dict | None, old: dict | None
    ) -> bool:
        """Whether every ``matchConditions`` expression is true (CEL, as kube-apiserver evaluates them)."""
        conditions = [c for c in hook.spec.get("matchConditions") or () if isinstance(c, dict)]
        if not conditions:
            return True
        from pyinformers.testing.apiserver._cel import match_condition

        request = self._review(attrs, obj, old, "")["request"]
        variables = {"object": obj, "oldObject": old, "request": request}
        for condition in conditions:
            result, error = match_condition(str(condition.get("expression") or ""), variables)
            if error:
                raise _CallFailed(
                    f"failed to evaluate match condition {condition.get('name')!r}: {error}"
                )
            if not result:
                return False
        return True

    def _review(self, attrs: Attributes, obj: dict | None, old: dict | None, uid: str) -> dict:
        gvk = {"group": attrs.group, "version": attrs.version, "kind": attrs.kind}
        gvr = {"group": attrs.group, "version": attrs.version, "resource": attrs.plural}
        request: dict[str, Any] = {"uid": uid, "kind": gvk, "resource": gvr}
        if attrs.subresource:
            request["subResource"] = attrs.subresource
        request.update({"requestKind": gvk, "requestResource": gvr})
        if attrs.subresource:
            request["requestSubResource"] = attrs.subresource
        if attrs.name:
            request["name"] = attrs.name
        if attrs.namespace:
            request["namespace"] = attrs.namespace
        request.update(
            {
                "operation": attrs.operation,
                "userInfo": {"username": attrs.user, "groups": list(attrs.groups)},
                "object": obj,
                "oldObject": old,
                "dryRun": attrs.dry_run,
                "options": {
                    "kind": _OPTIONS_KIND.get(attrs.operation, "CreateOptions"),
                    "apiVersion": "meta.k8s.io/v1",
                    **(attrs.options or {}),
                },
            }
        )
        return {"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/v1", "request": request}

    def _call(self, hook: _Hook, attrs: Attributes, obj: dict | None, old: dict | None) -> dict:
        """The webhook's ``response``; raises _CallFailed or the denial's StatusError."""
        spec = hook.spec
        client = spec.get("clientConfig") or {}
        timeout = int(spec.get("timeoutSeconds") or 10)
        if "url" not in client:
            service = client.get("service") or {}
            raise _CallFailed(
                f'failed to call webhook: Post "https://{service.get("name")}.{service.get("namespace")}'
                f'.svc:{service.get("port", 443)}{service.get("path", "")}?timeout={timeout}s": '
                "service unreachable from the embedded API server"
            )
        url = client["url"] + ("&" if "?" in client["url"] else "?") + f"timeout={timeout}s"
        uid = str(uuid.uuid4())
        status, data = self._pool.post(
            url,
            str(client.get("caBundle") or ""),
            orjson.dumps(self._review(attrs, obj, old, uid)),
            float(timeout),
        )
        if status != 200:
            text = " ".join(data.decode("utf-8", "replace").split())[:256]
            raise _CallFailed(
                f'failed to call webhook: an error on the server ("{text}") has prevented the request '
                "from succeeding"
            )
        try:
            response = orjson.loads(data)["response"]
            if not isinstance(response, dict):
                raise TypeError
        except (orjson.JSONDecodeError, KeyError, TypeError):
            raise _CallFailed(
                "received invalid webhook response: the response is not an AdmissionReview"
            ) from None
        if response.get("uid") != uid:
            raise _CallFailed(f'expected response.uid="{uid}", got "{response.get("uid") or ""}"')
        for warning in response.get("warnings") or ():
            if isinstance(warning, str) and warning.strip():
                attrs.warnings.append(warning)
        if not response.get("allowed"):
            raise _denied(hook.name, response.get("status"))
        return response

    def _admit(
        self, hook: _Hook, attrs: Attributes, obj: dict | None, old: dict | None
    ) -> dict | None:
        """Call one webhook; the response, or None when its match conditions said no or its failure
        was ignored."""
        try:
            if not self._conditions_hold(hook, attrs, obj, old):
                return None
            if attrs.dry_run and hook.spec.get("sideEffects") not in ("None", "NoneOnDryRun"):
                raise bad_request(
                    f"admission webhook {go_quote(hook.name)} does not support dry run"
                )
            return self._call(hook, attrs, obj, old)
        except _CallFailed as err:
            if hook.spec.get("failurePolicy", "Fail") == "Ignore":
                return None
            raise _internal(f"failed calling webhook {go_quote(hook.name)}: {err}") from None

    def mutate(self, attrs: Attributes, obj: dict | None, old: dict | None) -> dict | None:
        """``obj`` after every matching mutating webhook's patch (a new dict when patched)."""
        hooks = [h for h in self._hooks(MUTATING_KEY, True) if self._matches(h, attrs, obj, old)]
        changed: list[bool] = []
        for hook in hooks:
            obj, did = self._mutate_once(hook, attrs, obj, old)
            changed.append(did)
        for index, hook in enumerate(
            hooks
        ):  # reinvoked once when a later webhook changed the object
            if hook.spec.get("reinvocationPolicy") == "IfNeeded" and any(changed[index + 1 :]):
                obj, _ = self._mutate_once(hook, attrs, obj, old)
        return obj

    def _mutate_once(
        self, hook: _Hook, attrs: Attributes, obj: dict | None, old: dict | None
    ) -> tuple[dict | None, bool]:
        response = self._admit(hook, attrs, obj, old) or {}
        patch = response.get("patch")
        if not patch or obj is None:
            return obj, False
        if response.get("patchType") != "JSONPatch":
            raise _internal(
                f"failed calling webhook {go_quote(hook.name)}: unsupported patch type "
                f"{go_quote(str(response.get('patchType')))}"
            )
        try:
            patched = json_patch(obj, orjson.loads(base64.b64decode(patch)))
        except (PatchError, ValueError) as err:
            raise _internal(f"failed calling webhook {go_quote(hook.name)}: {err}") from None
        if not isinstance(patched, dict):
            raise _internal(
                f"failed calling webhook {go_quote(hook.name)}: the patched object is not an object"
            )
        return patched, patched != obj

    def validate(self, attrs: Attributes, obj: dict | None, old: dict | None) -> None:
        """Raise the first denial (or failure under ``Fail``) of the matching validating webhooks."""
        for hook in self._hooks(VALIDATING_KEY, False):
            if self._matches(hook, attrs, obj, old):
                self._admit(hook, attrs, obj, old)

    # -- conversion -----------------------------------------------------------------------
    def converts(self, crd_name: str) -> bool:
        crd = self._crd(crd_name)
        conversion = ((crd or {}).get("spec") or {}).get("conversion") or {}
        return conversion.get("strategy") == "Webhook"

    def storage_version(self, crd_name: str) -> str | None:
        crd = self._crd(crd_name) or {}
        for version in (crd.get("spec") or {}).get("versions") or ():
            if isinstance(version, dict) and version.get("storage"):
                return str(version.get("name"))
        return None

    def convert(self, crd_name: str, objects: list[dict], api_version: str) -> list[dict]:
        """``objects`` as ``api_version`` (those already in it untouched), by the CRD's webhook."""
        todo = [i for i, obj in enumerate(objects) if obj.get("apiVersion") != api_version]
        if not todo:
            return objects
        crd = self._crd(crd_name) or {}
        webhook = ((crd.get("spec") or {}).get("conversion") or {}).get("webhook") or {}
        client = webhook.get("clientConfig") or {}
        kind = ((crd.get("spec") or {}).get("names") or {}).get("kind", "")
        what = f"conversion webhook for {api_version}, Kind={kind}"
        uid = str(uuid.uuid4())
        review = {
            "kind": "ConversionReview",
            "apiVersion": "apiextensions.k8s.io/v1",
            "request": {
                "uid": uid,
                "desiredAPIVersion": api_version,
                "objects": [objects[i] for i in todo],
            },
        }
        try:
            if "url" not in client:
                raise _CallFailed("service unreachable from the embedded API server")
            status, data = self._pool.post(
                client["url"] + "?timeout=30s",
                str(client.get("caBundle") or ""),
                orjson.dumps(review),
                30.0,
            )
            if status != 200:
                raise _CallFailed(f"the server answered {status}")
            response = orjson.loads(data).get("response") or {}
        except (_CallFailed, orjson.JSONDecodeError, AttributeError) as err:
            raise _internal(f"{what} failed: {err}") from None
        result = response.get("result") or {}
        if result.get("status") != "Success":
            raise _internal(f"{what} failed: {result.get('message') or 'conversion failed'}")
        converted = response.get("convertedObjects")
        if not isinstance(converted, list) or len(converted) != len(todo):
            raise _internal(
                f"{what} failed: returned {len(converted or [])} objects, expected {len(todo)}"
            )
        out = list(objects)
        for index, obj in zip(todo, converted):
            out[index] = obj
        return out


def _denied(name: str, status: Any) -> StatusError:
    status = status if isinstance(status, dict) else {}
    code = status.get("code") if isinstance(status.get("code"), int) else 0
    code = code if code >= 400 else 400
    denied_by = f"admission webhook {go_quote(name)} denied the request"
    message, reason = str(status.get("message") or ""), str(status.get("reason") or "")
    text = (
        f"{denied_by}: {message}"
        if message
        else f"{denied_by}: {reason}"
        if reason
        else f"{denied_by} without explanation"
    )
    return StatusError(
        code,
        reason,
        text,
        details=status.get("details") if isinstance(status.get("details"), dict) else None,
    )
