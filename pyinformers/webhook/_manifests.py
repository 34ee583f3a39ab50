"""The Kubernetes objects that make the API server call a :class:`~pyinformers.webhook.Webhooks`.

* a ``MutatingWebhookConfiguration`` and a ``ValidatingWebhookConfiguration``
  named after the registry, one webhook entry per handler, with its rules,
  failure policy, side effects, timeout, selectors and match conditions;
* per conversion, the CRD's ``spec.conversion`` stanza, as a partial CRD
  (a merge patch: ``kubectl patch crd NAME --type merge --patch-file ...``).

The API server reaches the webhook at a URL (``https://HOST:PORT``, the
handler's path appended) or through a Service (``namespace``, ``name``,
``port``, the path), and trusts it with ``ca_bundle`` (PEM bytes; base64 in
the objects). Output is stable: the same registry gives the same objects.

Pure functions.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from pyinformers.webhook._admission import ADMISSION_V1, AdmissionWebhook
from pyinformers.webhook._registry import CONVERT_PATH, Webhooks

__all__ = ["ClientConfig", "configurations", "conversion_stanza"]

_REGISTRATION = "admissionregistration.k8s.io/v1"


@dataclass(frozen=True)
class ClientConfig:
    """Where the API server sends reviews: ``url`` (``https://HOST:PORT``) or a Service, and the CA it trusts."""

    url: str | None = None
    service_namespace: str = ""
    service_name: str = ""
    service_port: int = 443
    ca_bundle: bytes | None = None

    def __post_init__(self) -> None:
        if (self.url is None) == (not self.service_name):
            raise ValueError("a webhook client config has either a url or a service")
        if self.url is not None and not self.url.startswith("https://"):
            raise ValueError(f"a webhook url must be https://HOST:PORT, got {self.url!r}")
        if self.service_name and not self.service_namespace:
            raise ValueError("a webhook service needs its namespace")

    @classmethod
    def parse_service(cls, text: str, ca_bundle: bytes | None = None) -> ClientConfig:
        """``NS/NAME[:PORT]`` -> a Service client config; ValueError with the expected form otherwise."""
        namespace, slash, rest = text.partition("/")
        name, colon, port = rest.partition(":")
        if not slash or not namespace or not name or (colon and not port.isdigit()):
            raise ValueError(f"a webhook service is NAMESPACE/NAME[:PORT], got {text!r}")
        return cls(
            service_namespace=namespace,
            service_name=name,
            service_port=int(port) if colon else 443,
            ca_bundle=ca_bundle,
        )

    def render(self, path: str) -> dict[str, Any]:
        config: dict[str, Any]
        if self.url is not None:
            config = {"url": self.url.rstrip("/") + path}
        else:
            config = {
                "service": {
                    "namespace": self.service_namespace,
                    "name": self.service_name,
                    "port": self.service_port,
                    "path": path,
                }
            }
        if self.ca_bundle:
            config["caBundle"] = base64.b64encode(self.ca_bundle).decode("ascii")
        return config


def _entry(webhook: AdmissionWebhook, client: ClientConfig) -> dict[str, Any]:
    suffix = f"/{webhook.sub_resource}" if webhook.sub_resource else ""
    rules = [
        {
            "apiGroups": [r.group],
            "apiVersions": [r.version],
            "operations": list(webhook.operations),
            "resources": [r.plural + suffix],
            "scope": webhook.scope,
        }
        for r in webhook.resources
    ]
    entry: dict[str, Any] = {
        "name": webhook.name,
        "admissionReviewVersions": [ADMISSION_V1.rpartition("/")[2]],
        "clientConfig": client.render(webhook.path),
        "rules": rules,
        "failurePolicy": webhook.failure_policy,
        "matchPolicy": webhook.match_policy,
        "sideEffects": webhook.side_effects,
        "timeoutSeconds": webhook.timeout_seconds,
    }
    if webhook.namespace_selector is not None:
        entry["namespaceSelector"] = dict(webhook.namespace_selector)
    if webhook.object_selector is not None:
        entry["objectSelector"] = dict(webhook.object_selector)
    if webhook.match_conditions:
        entry["matchConditions"] = [dict(c) for c in webhook.match_conditions]
    if webhook.mutating:
        entry["reinvocationPolicy"] = webhook.reinvocation_policy
    return entry


def configurations(webhooks: Webhooks, client: ClientConfig) -> list[dict[str, Any]]:
    """The Mutating- then ValidatingWebhookConfiguration (each only when it has an entry)."""
    labels = {
        "app.kubernetes.io/managed-by": "pyinformers",
        "app.kubernetes.io/name": webhooks.name,
    }
    out: list[dict[str, Any]] = []
    for mutating, kind in (
        (True, "MutatingWebhookConfiguration"),
        (False, "ValidatingWebhookConfiguration"),
    ):
        entries = [_entry(w, client) for w in webhooks.admission if w.mutating == mutating]
        if entries:
            out.append(
                {
                    "apiVersion": _REGISTRATION,
                    "kind": kind,
                    "metadata": {"name": webhooks.name, "labels": dict(labels)},
                    "webhooks": entries,
                }
            )
    return out


def conversion_stanza(webhooks: Webhooks, client: ClientConfig) -> list[dict[str, Any]]:
    """Per conversion, a partial CRD holding ``spec.conversion`` (strategy Webhook, pointing at /convert)."""
    return [
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": conversion.crd_name},
            "spec": {
                "conversion": {
                    "strategy": "Webhook",
                    "webhook": {
                        "clientConfig": client.render(CONVERT_PATH),
                        "conversionReviewVersions": ["v1"],
                    },
                }
            },
        }
        for conversion in webhooks.conversions
    ]
