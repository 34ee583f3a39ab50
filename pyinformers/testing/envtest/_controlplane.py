"""``ControlPlane``: a real etcd + kube-apiserver (+ kube-controller-manager) for tests.

What envtest is to controller-runtime: the genuine Kubernetes API server,
started from local binaries (see :mod:`pyinformers.testing.envtest._assets`;
``make envtest`` builds them) on free loopback ports, with throwaway state::

    with ControlPlane(controller_manager=True) as cp:
        api = cp.api_client()                      # admin (group system:masters)
        sa = cp.client_for_service_account("ns", "ctl", rules=[...])   # only what RBAC grants
        cp.write_kubeconfig("kubeconfig.yaml")

The pieces:

* **etcd**, one member, fsync off, data in the state directory;
* **kube-apiserver** serving HTTPS with a self-signed certificate (the CA is
  in the kubeconfig), authenticating a static bearer token for the admin user
  (group ``system:masters``) and ServiceAccount tokens (the TokenRequest API
  works: issuer, signing and verification keys are set), authorizing with
  RBAC only; the ServiceAccount admission plugin is off, so Pods need no
  token volumes (there is no kubelet anyway);
* optionally **kube-controller-manager**, without leader election, running
  the garbage collector, namespace, Deployment, ReplicaSet, ServiceAccount,
  root-CA publisher and ClusterRole aggregation controllers. There is no
  scheduler and no kubelet: Pods stay Pending (see
  :mod:`pyinformers.testing._simulator` for Deployments that become available).

:meth:`ControlPlane.start` returns only when ``/readyz`` answers ``ok``, the
OpenAPI v2 and v3 documents are served and the ``default`` namespace exists
(and, with a controller manager, when its ``/healthz`` is ok). A component
that exits during start-up or later surfaces as
:class:`~pyinformers.testing.envtest._processes.ComponentExited` with the tail of its
log (:meth:`ControlPlane.check`). :meth:`ControlPlane.stop` ends exactly the
processes it started, in reverse order, and removes the state directory.

Thread-safety: after ``start`` returns, the read-only properties,
``api_client``, ``kubeconfig``/``write_kubeconfig``, ``check`` and
``client_for_service_account`` may be used from any thread; ``start``,
``stop`` and ``restart_apiserver`` belong to the owner.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import ssl
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pyinformers.testing.envtest._assets import (
    ETCD,
    KUBE_APISERVER,
    KUBE_CONTROLLER_MANAGER,
    Binaries,
    MissingBinaries,
    find_binaries,
)
from pyinformers.testing.envtest._certs import make_service_account_keys, make_serving_certs
from pyinformers.testing.envtest._processes import Component, ComponentExited
from pyinformers.testing.envtest._serviceaccounts import client_for_service_account

__all__ = ["ControlPlane", "ComponentExited", "MissingBinaries", "DEFAULT_CONTROLLERS"]

_CONTEXT = "pyinformers-controlplane"
_ADMIN = "pyinformers-admin"

#: The kube-controller-manager controllers a ControlPlane runs by default.
DEFAULT_CONTROLLERS: tuple[str, ...] = (
    "garbage-collector-controller",
    "namespace-controller",
    "deployment-controller",
    "replicaset-controller",
    "serviceaccount-controller",
    "root-ca-certificate-publisher-controller",
    "clusterrole-aggregation-controller",
)


def _free_ports(count: int) -> list[int]:
    """``count`` distinct free loopback ports (held open together while chosen)."""
    held = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            held.append(s)
        return [s.getsockname()[1] for s in held]
    finally:
        for s in held:
            s.close()


class ControlPlane:
    """A real etcd + kube-apiserver (+ kube-controller-manager) on loopback ports.

    ``binary_dir``: where the binaries are (default: ``KUBEBUILDER_ASSETS``,
    then ``make envtest``'s cache). ``controller_manager``: also run
    kube-controller-manager with ``controllers``. ``state_dir``: a parent
    directory for the throwaway state (default: the system temp dir).
    ``start_timeout``: seconds for the whole start-up. ``*_args``: extra
    flags appended to each component's command line (later flags win).
    """

    def __init__(
        self,
        *,
        binary_dir: str | os.PathLike[str] | None = None,
        controller_manager: bool = False,
        controllers: Sequence[str] = DEFAULT_CONTROLLERS,
        state_dir: str | os.PathLike[str] | None = None,
        start_timeout: float = 120.0,
        etcd_args: Sequence[str] = (),
        apiserver_args: Sequence[str] = (),
        controller_manager_args: Sequence[str] = (),
    ) -> None:
        self._binary_dir = binary_dir
        self._want_kcm = controller_manager
        self._controllers = tuple(controllers)
        self._state_parent = state_dir
        self._start_timeout = start_timeout
        self._extra = {
            ETCD: list(etcd_args),
            KUBE_APISERVER: list(apiserver_args),
            KUBE_CONTROLLER_MANAGER: list(controller_manager_args),
        }
        self._binaries: Binaries | None = None
        self._dir: Path | None = None
        self._components: dict[str, Component] = {}
        self._ports: dict[str, int] = {}
        self._token = secrets.token_hex(24)
        self._kubeconfig_path: Path | None = None
        self._started_at: float | None = None
        self.start_seconds: float | None = None  # how long the last start() took

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> ControlPlane:
        """Start every component and wait until the API is ready; returns self.

        Raises :class:`MissingBinaries` (nothing started), or
        :class:`ComponentExited` / ``TimeoutError`` after stopping whatever
        had been started.
        """
        if self._components:
            raise RuntimeError("this ControlPlane is already started")
        need = (
            (ETCD, KUBE_APISERVER, KUBE_CONTROLLER_MANAGER)
            if self._want_kcm
            else (ETCD, KUBE_APISERVER)
        )
        self._binaries = find_binaries(self._binary_dir, need=need)
        began = time.monotonic()
        self._dir = Path(
            tempfile.mkdtemp(prefix="pyinformers-controlplane-", dir=self._state_parent)
        )
        try:
            self._prepare_files()
            deadline = began + self._start_timeout
            self._start_etcd(deadline)
            self._start_apiserver(deadline)
            if self._want_kcm:
                self._start_controller_manager(deadline)
        except BaseException:
            self.stop()
            raise
        self.start_seconds = time.monotonic() - began
        return self

    def stop(self, timeout: float = 15.0) -> bool:
        """Stop the processes this control plane started (newest first) and remove its state.

        Idempotent. Each process gets SIGTERM and ``timeout`` seconds, then
        SIGKILL, so all have ended when it returns True (the lifecycle's shape:
        ``stop(timeout) -> bool`` everywhere).
        """
        for name in (KUBE_CONTROLLER_MANAGER, KUBE_APISERVER, ETCD):
            component = self._components.pop(name, None)
            if component is not None:
                component.stop(timeout)
        self._components.clear()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
        return True

    def __enter__(self) -> ControlPlane:
        if not self._components:
            self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self._components else "stopped"
        where = f" {self.url}" if KUBE_APISERVER in self._ports and self._components else ""
        return f"<ControlPlane {state}{where} components={sorted(self._components)}>"

    def check(self) -> None:
        """Raise :class:`ComponentExited` (with its log tail) if a started component is not running."""
        for component in list(self._components.values()):
            component.check()

    def restart_apiserver(self) -> None:
        """Stop kube-apiserver and start it again on the same port and etcd; wait until ready.

        Every watch is ended and every watch cache starts afresh, so a watch
        from a resourceVersion seen before the restart may get 410 Expired.
        """
        component = self._components.get(KUBE_APISERVER)
        if component is None:
            raise RuntimeError("the control plane is not running")
        component.stop()
        component.start()
        self._wait_apiserver_ready(time.monotonic() + self._start_timeout)

    # -- addresses and credentials ----------------------------------------------------------

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self._ports[KUBE_APISERVER]}"

    @property
    def token(self) -> str:
        """The admin user's bearer token (group ``system:masters``)."""
        return self._token

    @property
    def ca_cert(self) -> Path:
        """The CA certificate that signed kube-apiserver's serving certificate."""
        return self._path("pki", "ca.crt")

    @property
    def state_dir(self) -> Path:
        return self._path()

    @property
    def binaries(self) -> Binaries:
        if self._binaries is None:
            raise RuntimeError("the control plane is not started")
        return self._binaries

    @property
    def has_controller_manager(self) -> bool:
        """True when kube-controller-manager runs (garbage collection, namespace finalization ...)."""
        return KUBE_CONTROLLER_MANAGER in self._components

    @property
    def components(self) -> Mapping[str, Component]:
        return dict(self._components)

    @property
    def kubeconfig_path(self) -> Path:
        """The admin kubeconfig written at start (in the state directory)."""
        if self._kubeconfig_path is None:
            raise RuntimeError("the control plane is not started")
        return self._kubeconfig_path

    def kubeconfig(
        self, *, namespace: str = "default", token: str | None = None, user: str = _ADMIN
    ) -> dict:
        """A kubeconfig (as a dict) for this API server: the admin's, or ``token``'s."""
        import base64

        ca = base64.b64encode(self.ca_cert.read_bytes()).decode()
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": _CONTEXT,
                    "cluster": {"server": self.url, "certificate-authority-data": ca},
                }
            ],
            "users": [{"name": user, "user": {"token": token or self._token}}],
            "contexts": [
                {
                    "name": _CONTEXT,
                    "context": {"cluster": _CONTEXT, "user": user, "namespace": namespace},
                }
            ],
            "current-context": _CONTEXT,
            "preferences": {},
        }

    def write_kubeconfig(self, path: str | os.PathLike[str], **options: Any) -> str:
        """Write :meth:`kubeconfig` (same options) as YAML to ``path`` (mode 0600); returns the path."""
        import yaml

        path = os.fspath(path)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            yaml.safe_dump(self.kubeconfig(**options), f, default_flow_style=False)
        return path

    def api_client(self, *, token: str | None = None) -> Any:
        """A new ``kubernetes.client.ApiClient`` for the admin (or for ``token``); the caller closes it."""
        from kubernetes import config

        return config.new_client_from_config_dict(self.kubeconfig(token=token))

    def client_for_service_account(
        self,
        namespace: str,
        name: str,
        *,
        rules: Iterable[Mapping[str, Any]] = (),
        cluster_rules: Iterable[Mapping[str, Any]] = (),
        expiration_seconds: int = 3600,
    ) -> Any:
        """An ``ApiClient`` authenticated as ServiceAccount ``namespace/name``, holding only the given rules.

        Creates the namespace and ServiceAccount if missing, a Role with
        ``rules`` bound in ``namespace`` and a ClusterRole with ``cluster_rules``
        bound cluster-wide (each only when non-empty), and a token from the
        TokenRequest API. Rules are RBAC PolicyRule dicts, e.g.
        ``{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["get", "list", "watch"]}``.
        """
        with self.api_client() as admin:
            token = client_for_service_account(
                admin,
                namespace,
                name,
                rules=rules,
                cluster_rules=cluster_rules,
                expiration_seconds=expiration_seconds,
            )
        return self.api_client(token=token)

    def rss_bytes(self) -> dict[str, int]:
        """Resident memory of each running component, in bytes."""
        return {
            name: rss for name, c in self._components.items() if (rss := c.rss_bytes()) is not None
        }

    # -- start-up ----------------------------------------------------------------------------

    def _path(self, *parts: str) -> Path:
        if self._dir is None:
            raise RuntimeError("the control plane is not started")
        return self._dir.joinpath(*parts)

    def _prepare_files(self) -> None:
        pki = self._path("pki")
        make_serving_certs(pki)
        make_service_account_keys(pki)
        tokens = self._path("pki", "tokens.csv")
        tokens.write_text(f'{self._token},{_ADMIN},{_ADMIN},"system:masters"\n')
        os.chmod(tokens, 0o600)
        names = [ETCD, "etcd-peer", KUBE_APISERVER, KUBE_CONTROLLER_MANAGER]
        self._ports = dict(zip(names, _free_ports(len(names))))
        self._kubeconfig_path = Path(self.write_kubeconfig(self._path("admin.kubeconfig")))

    def _component(self, name: str, argv: list[str]) -> Component:
        component = Component(name, argv + self._extra[name], self._path("logs", f"{name}.log"))
        self._components[name] = component
        component.start()
        return component

    def _start_etcd(self, deadline: float) -> None:
        client = f"http://127.0.0.1:{self._ports[ETCD]}"
        peer = f"http://127.0.0.1:{self._ports['etcd-peer']}"
        etcd = self._component(
            ETCD,
            [
                str(self.binaries.etcd),
                "--name=default",
                f"--data-dir={self._path('etcd')}",
                f"--listen-client-urls={client}",
                f"--advertise-client-urls={client}",
                f"--listen-peer-urls={peer}",
                f"--initial-advertise-peer-urls={peer}",
                f"--initial-cluster=default={peer}",
                "--unsafe-no-fsync=true",
                "--log-level=warn",
            ],
        )
        self._poll(
            deadline,
            etcd,
            lambda: self._get(f"{client}/health", tls=False) is not None,
            "etcd /health",
        )

    def _start_apiserver(self, deadline: float) -> None:
        port = self._ports[KUBE_APISERVER]
        pki = self._path("pki")
        self._component(
            KUBE_APISERVER,
            [
                str(self.binaries.kube_apiserver),
                f"--etcd-servers=http://127.0.0.1:{self._ports[ETCD]}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={port}",
                f"--cert-dir={pki}",
                f"--tls-cert-file={pki / 'serving.crt'}",
                f"--tls-private-key-file={pki / 'serving.key'}",
                f"--token-auth-file={pki / 'tokens.csv'}",
                "--authorization-mode=RBAC",
                f"--service-account-issuer=https://127.0.0.1:{port}",
                f"--service-account-key-file={pki / 'sa.pub'}",
                f"--service-account-signing-key-file={pki / 'sa.key'}",
                "--service-cluster-ip-range=10.0.0.0/24",
                "--allow-privileged=true",
                "--disable-admission-plugins=ServiceAccount",
                "--profiling=false",
            ],
        )
        self._wait_apiserver_ready(deadline)

    def _wait_apiserver_ready(self, deadline: float) -> None:
        apiserver = self._components[KUBE_APISERVER]
        for path in ("/readyz", "/openapi/v2", "/openapi/v3", "/api/v1/namespaces/default"):
            self._poll(
                deadline,
                apiserver,
                lambda p=path: self._get(self.url + p) is not None,
                f"kube-apiserver {path}",
            )

    def _start_controller_manager(self, deadline: float) -> None:
        port = self._ports[KUBE_CONTROLLER_MANAGER]
        pki = self._path("pki")
        kubeconfig = str(self.kubeconfig_path)
        assert self.binaries.kube_controller_manager is not None
        kcm = self._component(
            KUBE_CONTROLLER_MANAGER,
            [
                str(self.binaries.kube_controller_manager),
                f"--kubeconfig={kubeconfig}",
                f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                f"--cert-dir={self._path('kcm-certs')}",
                f"--controllers={','.join(self._controllers)}",
                f"--root-ca-file={pki / 'ca.crt'}",
                f"--service-account-private-key-file={pki / 'sa.key'}",
                "--use-service-account-credentials=false",
                "--profiling=false",
            ],
        )
        self._poll(
            deadline,
            kcm,
            lambda: self._get(f"https://127.0.0.1:{port}/healthz", verify=False) is not None,
            "kube-controller-manager /healthz",
        )

    def _get(self, url: str, *, tls: bool = True, verify: bool = True) -> bytes | None:
        """GET ``url`` as the admin; the body on 200, None on any failure."""
        request = urllib.request.Request(url, headers={"Authorization": f"Bearer {self._token}"})
        context = None
        if tls and verify:
            context = ssl.create_default_context(cafile=str(self.ca_cert))
        elif tls:  # kube-controller-manager's self-made serving certificate: only liveness matters
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        try:
            with urllib.request.urlopen(request, timeout=5, context=context) as response:
                return response.read() if response.status == 200 else None
        except (urllib.error.URLError, OSError, ssl.SSLError):
            return None

    @staticmethod
    def _poll(deadline: float, component: Component, ready: Any, what: str) -> None:
        pause = 0.05
        while True:
            component.check()
            if ready():
                return
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"{what} not ready in time (log: {component.log}); last lines:\n{component.log_tail()}"
                )
            time.sleep(pause)  # polling a child process: there is nothing to wait on
            pause = min(pause * 1.5, 0.5)
