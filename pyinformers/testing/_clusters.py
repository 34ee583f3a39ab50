"""One test-facing handle over either server: the embedded one or a real control plane.

A test written against :class:`Cluster` runs unchanged on the in-process
:class:`~pyinformers.testing.ApiServer` and on a real
:class:`~pyinformers.testing.envtest.ControlPlane`. The pytest plugin's
``k8s`` fixture hands one out per test (see
:mod:`pyinformers.testing.pytest_plugin`): a fresh embedded server per test,
or the one control plane of the session, and in both cases a fresh namespace
of the test's own (:attr:`Cluster.namespace`), so tests never see each
other's objects.

Which server: :func:`selected_servers` reads ``--k8s-server`` /
``PYINFORMERS_TEST_SERVER`` (``embedded``, ``real`` or ``both``).

Thread-safety: a handle belongs to one test; its methods may be called from
the test's threads.
"""

from __future__ import annotations

import os
import re
import secrets
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pyinformers.api import ResourceClient
from pyinformers.api._errors import ApiError, NotFound
from pyinformers.resources import CONFIGMAPS, NAMESPACES, SECRETS
from pyinformers.testing._waiting import eventually
from pyinformers.testing.apiserver._defaults import ROOT_CA_CONFIGMAP

__all__ = ["Cluster", "EMBEDDED", "REAL", "SERVER_KINDS", "selected_servers", "namespace_for"]

EMBEDDED = "embedded"
REAL = "real"
SERVER_KINDS = (EMBEDDED, REAL)
ENV = "PYINFORMERS_TEST_SERVER"
_NAMESPACE_SETTLE_TIMEOUT = 60.0  # real seconds for kube-controller-manager to fill a new namespace


def selected_servers(option: str | None) -> tuple[str, ...]:
    """The server kinds a run uses: the option, else ``$PYINFORMERS_TEST_SERVER``, else embedded."""
    value = (option or os.environ.get(ENV) or EMBEDDED).strip().lower()
    if value == "both":
        return SERVER_KINDS
    if value not in SERVER_KINDS:
        raise ValueError(f"unknown test server {value!r}: use embedded, real or both")
    return (value,)


def namespace_for(test_name: str) -> str:
    """A valid, unique namespace name derived from a test's name (DNS label, <= 63 chars)."""
    base = re.sub(r"[^a-z0-9-]+", "-", test_name.lower()).strip("-")
    base = re.sub(r"^test-?", "", base)[:48].strip("-") or "t"
    return f"{base}-{secrets.token_hex(3)}"


class Cluster:
    """A server for one test: ``kind``, ``namespace``, admin clients and kubeconfigs.

    ``embedded`` is the :class:`~pyinformers.testing.ApiServer` (None on a
    real server) and ``control_plane`` the
    :class:`~pyinformers.testing.envtest.ControlPlane` (None on the
    embedded one), for the few things only one of them can do.
    """

    def __init__(self, kind: str, server: Any, namespace: str, workdir: Path) -> None:
        self.kind = kind
        self.server = server
        self.namespace = namespace
        self._workdir = workdir
        self._clients: list[Any] = []
        self._simulators: list[Any] = []
        self._webhooks: list[Any] = []

    def __repr__(self) -> str:
        return f"<Cluster {self.kind} {self.url} namespace={self.namespace}>"

    # -- what both servers have -----------------------------------------------------------

    @property
    def embedded(self) -> Any:
        return self.server if self.kind == EMBEDDED else None

    @property
    def control_plane(self) -> Any:
        return self.server if self.kind == REAL else None

    @property
    def real(self) -> bool:
        return self.kind == REAL

    @property
    def garbage_collection(self) -> bool:
        """True when owned objects are collected after their owner (embedded GC, or kube-controller-manager)."""
        return not self.real or self.server.has_controller_manager

    @property
    def url(self) -> str:
        return self.server.url

    def api_client(self) -> Any:
        """A new admin ``kubernetes.client.ApiClient``; closed when the test ends."""
        client = self.server.api_client()
        self._clients.append(client)
        return client

    def kubeconfig(self) -> dict:
        """An admin kubeconfig (dict) whose context's namespace is this test's."""
        return self.server.kubeconfig(namespace=self.namespace)

    def write_kubeconfig(self, path: str | os.PathLike[str] | None = None) -> str:
        """Write :meth:`kubeconfig` to ``path`` (default: in the test's temp dir); returns the path."""
        import yaml

        path = os.fspath(path or self._workdir / "kubeconfig")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            yaml.safe_dump(self.kubeconfig(), f, default_flow_style=False)
        return path

    def client_for_service_account(
        self,
        name: str,
        *,
        rules: Iterable[Mapping[str, Any]] = (),
        cluster_rules: Iterable[Mapping[str, Any]] = (),
        namespace: str | None = None,
    ) -> Any:
        """An ``ApiClient`` for ServiceAccount ``name`` (in this test's namespace) holding only these rules.

        Real servers only: the embedded server does not authorize, so there
        such a client would prove nothing (raises ``NotImplementedError``).
        """
        if not self.real:
            raise NotImplementedError(
                "the embedded server has no RBAC: use the real control plane (--k8s-server=real)"
            )
        client = self.server.client_for_service_account(
            namespace or self.namespace, name, rules=rules, cluster_rules=cluster_rules
        )
        self._clients.append(client)
        return client

    def expire_watches(self) -> None:
        """End every open watch so that re-watching from a resourceVersion seen so far gets 410 Gone.

        Embedded: stall and cut the watches, write a throwaway Secret, compact
        the history and cut them again. Real: write a
        throwaway Secret in this test's namespace (so the current
        resourceVersion is newer than anything a ConfigMap watcher has seen)
        and restart kube-apiserver, whose watch caches then start after it.
        """
        with self.server.api_client() as admin:
            secrets_client = ResourceClient(admin, SECRETS)
            throwaway = {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"generateName": "expire-watches-", "namespace": self.namespace},
            }
            if self.real:
                secrets_client.create(throwaway)
                self.server.restart_apiserver()
                return
            # Watchers re-watch into a stall (no events, no bookmarks) while history moves
            # past them and is compacted; cut again, and their next watch gets 410.
            faults = self.server.faults
            faults.stall_watches = True
            try:
                faults.drop_watches()
                secrets_client.create(throwaway)
                self.server.compact()
                faults.drop_watches()
            finally:
                faults.stall_watches = False

    def simulate_workloads(self, *, delay: float = 0.2) -> Any:
        """Start a :class:`~pyinformers.testing._simulator.DeploymentSimulator` for this test's namespace."""
        from pyinformers.testing._simulator import DeploymentSimulator

        simulator = DeploymentSimulator(self.api_client(), namespace=self.namespace, delay=delay)
        self._simulators.append(simulator)
        return simulator.start()

    def install_webhooks(
        self,
        webhooks: Any,
        *,
        url: str | None = None,
        ca_bundle: bytes | None = None,
        ready_timeout: float = 30.0,
    ) -> Any:
        """Serve a :class:`~pyinformers.webhook.Webhooks` from this process and make the server call it.

        See :func:`pyinformers.testing.install_webhooks` (envtest's
        WebhookInstallOptions): a generated CA, a webhook server on a free
        loopback port, the configurations restricted to this test's
        namespace. Returns an :class:`~pyinformers.testing.InstalledWebhooks`
        (a context manager); what is still installed when the test ends is
        uninstalled then.
        """
        from pyinformers.testing._webhook_install import install_webhooks

        installed = install_webhooks(
            self.api_client(),
            webhooks,
            self._workdir,
            namespace=self.namespace,
            url=url,
            ca_bundle=ca_bundle,
            ready_timeout=ready_timeout,
        )
        self._webhooks.append(installed)
        return installed

    # -- set-up and tear-down (the fixture's) -----------------------------------------------

    def create_namespace(self) -> None:
        """Create this test's namespace; on a real server, also wait for its ``kube-root-ca.crt``.

        kube-controller-manager publishes that ConfigMap into every new namespace a moment
        later; waiting for it here means it never lands in the middle of a test (as an
        unexpected ADDED event or bookmark, or between an informer's list and the test's own).
        """
        with self.server.api_client() as admin:
            ResourceClient(admin, NAMESPACES).create(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}}
            )
            if self.real:
                configmaps = ResourceClient(admin, CONFIGMAPS)

                def published() -> bool:
                    try:
                        return bool(configmaps.get(ROOT_CA_CONFIGMAP, self.namespace))
                    except NotFound:
                        return False

                eventually(
                    published,
                    _NAMESPACE_SETTLE_TIMEOUT,
                    what=f"{ROOT_CA_CONFIGMAP} in {self.namespace}",
                )

    def close(self) -> None:
        """Stop simulators, close clients; on a real server delete the namespace (without waiting)."""
        for simulator in self._simulators:
            simulator.stop()
        for installed in self._webhooks:
            installed.uninstall()
        for client in self._clients:
            client.close()
        if self.real:
            try:
                with self.server.api_client() as admin:
                    ResourceClient(admin, NAMESPACES).delete(self.namespace)
            except (ApiError, OSError):
                pass
