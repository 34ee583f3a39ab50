"""Install a module's webhooks into a test API server, served from this process (envtest's WebhookInstallOptions).

:func:`install_webhooks` does what a test of a webhook needs, on the
embedded server and on a real control plane alike:

1. makes a throwaway CA and a serving certificate for ``127.0.0.1``;
2. starts a :class:`~pyinformers.manager.WebhookServer` for the registry on a
   free loopback port with that certificate;
3. creates the registry's Mutating- and ValidatingWebhookConfiguration with
   ``url: https://127.0.0.1:PORT/...`` and the CA as ``caBundle`` (entries
   without a ``namespaceSelector`` get one for ``namespace`` when given, so
   tests sharing one control plane do not see each other's webhooks), and
   points each converted CRD's ``spec.conversion`` at the server;
4. waits until the API server calls them: a last configuration (a probe
   webhook that denies labelled ConfigMaps) is created after the others, and
   a dry-run create of such a ConfigMap is repeated until the probe denies it.
   A real kube-apiserver picks configurations up through an informer, a few
   milliseconds to a second after they are written.

:meth:`InstalledWebhooks.uninstall` (or leaving its ``with`` block) deletes
the configurations and stops the server.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyinformers.api import ApiError, NotFound, Resource, ResourceClient
from pyinformers.manager import ANY_PORT, TLSFiles, WebhookServer
from pyinformers.webhook import ClientConfig, Denied, Webhooks, configurations, conversion_stanza

__all__ = ["InstalledWebhooks", "install_webhooks"]

MUTATING = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "mutatingwebhookconfigurations",
    "MutatingWebhookConfiguration",
    namespaced=False,
)
VALIDATING = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "validatingwebhookconfigurations",
    "ValidatingWebhookConfiguration",
    namespaced=False,
)
CRDS = Resource(
    "apiextensions.k8s.io",
    "v1",
    "customresourcedefinitions",
    "CustomResourceDefinition",
    namespaced=False,
)
_CONFIGMAPS = Resource("", "v1", "configmaps", "ConfigMap")
_PROBE_LABEL = "webhooks.pyinformers.io/probe"
_PROBE_DENIAL = "pyinformers webhook probe"


@dataclass
class InstalledWebhooks:
    """A registry served from this process and configured in an API server; a context manager."""

    webhooks: Webhooks
    server: WebhookServer
    ca_cert: Path
    api_client: Any
    names: list[tuple[Resource, str]] = field(default_factory=list)
    #: CRDs whose conversion points at this server (set back to strategy None on uninstall)
    converted: list[str] = field(default_factory=list)

    @property
    def url(self) -> str:
        return self.server.url

    def __enter__(self) -> InstalledWebhooks:
        return self

    def __exit__(self, *exc: object) -> None:
        self.uninstall()

    def uninstall(self) -> None:
        """Delete the configurations, set converted CRDs back to ``strategy: None``, stop the server.

        A CRD left pointing at a stopped server would fail every read of a
        version other than the stored one.
        """
        for resource, name in reversed(self.names):
            try:
                ResourceClient(self.api_client, resource).delete(name)
            except (NotFound, ApiError, OSError):
                pass
        self.names.clear()
        for crd in self.converted:
            try:
                ResourceClient(self.api_client, CRDS).patch(
                    crd, {"spec": {"conversion": {"strategy": "None", "webhook": None}}}
                )
            except (NotFound, ApiError, OSError):
                pass
        self.converted.clear()
        self.server.stop()


def _probe_registry(token: str) -> Webhooks:
    probe = Webhooks(f"pyinformers-probe-{token}")
    probe.validating(
        _CONFIGMAPS,
        name=f"probe-{token}.webhooks.pyinformers.io",
        operations=["CREATE"],
        object_selector={"matchLabels": {_PROBE_LABEL: token}},
    )(lambda request: Denied(_PROBE_DENIAL))
    return probe


def _restrict(documents: list[dict], namespace: str | None) -> list[dict]:
    if namespace:
        for doc in documents:
            for entry in doc["webhooks"]:
                entry.setdefault(
                    "namespaceSelector", {"matchLabels": {"kubernetes.io/metadata.name": namespace}}
                )
    return documents


def _wait_for_probe(api_client: Any, token: str, timeout: float) -> None:
    from kubernetes import client as k8s

    core = k8s.CoreV1Api(api_client)
    body = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"generateName": "webhook-probe-", "labels": {_PROBE_LABEL: token}},
    }
    deadline = time.monotonic() + timeout
    delay = 0.01
    while True:
        try:
            core.create_namespaced_config_map("default", body, dry_run="All")
        except k8s.ApiException as err:
            if err.status == 403 and _PROBE_DENIAL in str(err.body):
                return
            if err.status not in (403, 500):
                raise
        if time.monotonic() > deadline:
            raise TimeoutError(f"the API server did not call the webhooks within {timeout:.0f} s")
        time.sleep(delay)  # the API server's informer picks configurations up on its own time
        delay = min(delay * 2, 0.2)


def install_webhooks(
    api_client: Any,
    webhooks: Webhooks,
    workdir: Path,
    *,
    namespace: str | None = None,
    url: str | None = None,
    ca_bundle: bytes | None = None,
    ready_timeout: float = 30.0,
) -> InstalledWebhooks:
    """Serve ``webhooks`` on 127.0.0.1 and configure the API server behind ``api_client`` to call them.

    ``namespace`` restricts entries without a namespace selector to that
    namespace; ``url`` (and ``ca_bundle``, the PEM CA it is trusted with)
    points the configurations at another server: a Manager's own, or one
    that cannot be reached. Returns once the API server calls the
    webhooks (or raises TimeoutError after ``ready_timeout`` seconds,
    uninstalling first).
    """
    from pyinformers.testing.envtest import make_serving_certs

    webhooks.check()
    token = secrets.token_hex(4)
    certs = make_serving_certs(
        Path(workdir) / f"webhook-{token}", ips=("127.0.0.1",), dns=("localhost",)
    )
    probe = _probe_registry(token)
    server = WebhookServer(
        [webhooks, probe], "127.0.0.1", ANY_PORT, tls=TLSFiles(str(certs.cert), str(certs.key))
    )
    server.start()
    installed = InstalledWebhooks(webhooks, server, certs.ca_cert, api_client)
    try:
        client = ClientConfig(url=server.url, ca_bundle=certs.ca_cert.read_bytes())
        for stanza in conversion_stanza(webhooks, client):
            crd = stanza["metadata"]["name"]
            try:
                ResourceClient(api_client, CRDS).patch(crd, {"spec": stanza["spec"]})
                installed.converted.append(crd)
            except NotFound:
                raise ValueError(
                    f"the CustomResourceDefinition {crd} is not installed: install it before its "
                    "conversion webhook"
                ) from None
        target = (
            client
            if url is None
            else ClientConfig(url=url, ca_bundle=ca_bundle or client.ca_bundle)
        )
        documents = _restrict(configurations(webhooks, target), namespace) + configurations(
            probe, client
        )
        for doc in documents:
            resource = MUTATING if doc["kind"] == "MutatingWebhookConfiguration" else VALIDATING
            doc["metadata"]["name"] = f"{doc['metadata']['name']}-{token}"
            ResourceClient(api_client, resource).create(doc)
            installed.names.append((resource, doc["metadata"]["name"]))
        _wait_for_probe(api_client, token, ready_timeout)
    except BaseException:
        installed.uninstall()
        raise
    return installed
