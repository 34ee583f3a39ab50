"""``Webhooks``: the handlers one operator registers, served together and configured together.

Handlers register with decorators at import time::

    WEBHOOKS = Webhooks("sample-controller")

    @WEBHOOKS.mutating(FOOS, operations=["CREATE"])
    def default_replicas(request):
        request.object["spec"].setdefault("replicas", 1)

    @WEBHOOKS.validating(FOOS)
    def check_name(request):
        if not valid(request.object["spec"]["deploymentName"]):
            return Denied("spec.deploymentName must be a DNS-1123 label")

:meth:`Webhooks.handle` answers a request body for a path (what the webhook
server calls); :func:`pyinformers.webhook.configurations` turns a registry
into its ValidatingWebhookConfiguration, MutatingWebhookConfiguration and
CRD conversion stanzas.

Thread-safety: register before serving; after that the registry is only
read, and :meth:`handle` may run on many threads at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import orjson

from pyinformers.api import Resource
from pyinformers.webhook._admission import AdmissionWebhook, Handler, ReviewError, review
from pyinformers.webhook._conversion import Conversion, review_conversion

__all__ = ["CONVERT_PATH", "Webhooks"]

#: The path conversion reviews are served on (one for every CRD; the objects' kind picks the conversion).
CONVERT_PATH = "/convert"

_JSON = "application/json"


def _default_name(verb: str, resource: Resource) -> str:
    name = f"{verb}-{resource.plural}.{resource.group or 'core'}"
    return name if name.count(".") >= 2 else f"{name}.pyinformers.io"


class Webhooks:
    """The admission webhooks and conversions of one operator (``name`` names its configurations)."""

    def __init__(self, name: str) -> None:
        if not name or name != name.lower() or "/" in name:
            raise ValueError(
                f"Webhooks needs a lower-case name for its configurations, got {name!r}"
            )
        self.name = name
        self._admission: dict[str, AdmissionWebhook] = {}  # path -> webhook
        self._conversions: dict[str, Conversion] = {}  # crd name -> conversion

    # -- registering ----------------------------------------------------------------
    def add(self, webhook: AdmissionWebhook) -> AdmissionWebhook:
        """Register a built :class:`AdmissionWebhook` (the decorators call this)."""
        if any(w.name == webhook.name for w in self._admission.values()):
            raise ValueError(f"webhook {webhook.name!r} is registered twice")
        self._admission[webhook.path] = webhook
        return webhook

    def _decorator(
        self,
        mutating: bool,
        resources: Resource | Sequence[Resource],
        name: str | None,
        options: dict[str, Any],
    ) -> Callable[[Handler], Handler]:
        covered = (resources,) if isinstance(resources, Resource) else tuple(resources)
        if "operations" in options:
            options["operations"] = tuple(str(op) for op in options["operations"])
        if "match_conditions" in options:
            options["match_conditions"] = tuple(dict(c) for c in options["match_conditions"])

        if not covered:
            raise ValueError("a webhook needs at least one resource")

        def register(handler: Handler) -> Handler:
            chosen = name or _default_name("default" if mutating else "validate", covered[0])
            self.add(
                AdmissionWebhook(
                    name=chosen, handler=handler, mutating=mutating, resources=covered, **options
                )
            )
            return handler

        return register

    def validating(
        self,
        resources: Resource | Sequence[Resource],
        *,
        name: str | None = None,
        **options: Any,
    ) -> Callable[[Handler], Handler]:
        """Decorator: a validating handler for ``resources``.

        Options are :class:`AdmissionWebhook`'s fields: ``operations``
        (default CREATE and UPDATE), ``sub_resource``, ``scope``,
        ``failure_policy``, ``side_effects``, ``timeout_seconds``,
        ``namespace_selector``, ``object_selector``, ``match_conditions``,
        ``match_policy``. ``name`` defaults to ``validate-PLURAL.GROUP``.
        """
        return self._decorator(False, resources, name, dict(options))

    def mutating(
        self,
        resources: Resource | Sequence[Resource],
        *,
        name: str | None = None,
        **options: Any,
    ) -> Callable[[Handler], Handler]:
        """Decorator: a mutating handler; the options of :meth:`validating` plus ``reinvocation_policy``.

        ``name`` defaults to ``default-PLURAL.GROUP``.
        """
        return self._decorator(True, resources, name, dict(options))

    def conversion(self, group: str, kind: str, *, hub: str, plural: str = "") -> Conversion:
        """The :class:`Conversion` of ``kind`` (register its spokes on it), created on first use."""
        conversion = Conversion(group, kind, hub, plural)
        existing = self._conversions.get(conversion.crd_name)
        if existing is not None:
            if existing.hub != hub:
                raise ValueError(
                    f"{conversion.crd_name} already converts through hub {existing.hub!r}"
                )
            return existing
        self._conversions[conversion.crd_name] = conversion
        return conversion

    # -- reading --------------------------------------------------------------------
    @property
    def admission(self) -> list[AdmissionWebhook]:
        """The admission webhooks, mutating first, each group by name."""
        return sorted(self._admission.values(), key=lambda w: (not w.mutating, w.name))

    @property
    def conversions(self) -> list[Conversion]:
        return [self._conversions[name] for name in sorted(self._conversions)]

    def paths(self) -> list[str]:
        """Every path served: each admission webhook's, and :data:`CONVERT_PATH` when there are conversions."""
        return sorted(self._admission) + ([CONVERT_PATH] if self._conversions else [])

    def check(self) -> None:
        """Raise ValueError when a conversion is incomplete (the server checks before it serves)."""
        for conversion in self._conversions.values():
            conversion.check()

    def handle(self, path: str, body: bytes) -> tuple[int, str, bytes]:
        """The HTTP answer to a review POSTed to ``path``: ``(status, content type, body)``.

        200 with the review's response; 404 for an unknown path; 400 with a
        one-line reason for a body that is not JSON or not a review this
        path serves.
        """
        conversions = list(self._conversions.values())
        webhook = self._admission.get(path)
        if not (path == CONVERT_PATH and conversions) and webhook is None:
            return 404, "text/plain; charset=utf-8", f"no webhook is served on {path}\n".encode()
        try:
            doc = orjson.loads(body)
        except orjson.JSONDecodeError as err:
            return 400, "text/plain; charset=utf-8", f"the body is not JSON: {err}\n".encode()
        try:
            answer = (
                review(webhook, doc) if webhook is not None else review_conversion(conversions, doc)
            )
            return 200, _JSON, orjson.dumps(answer)
        except ReviewError as err:
            return 400, "text/plain; charset=utf-8", f"{err}\n".encode()

    def __repr__(self) -> str:
        return f"<Webhooks {self.name!r} admission={len(self._admission)} conversions={sorted(self._conversions)}>"
