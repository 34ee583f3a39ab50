"""pyinformers.testing: test your controllers against a real API protocol, in process.

:class:`ApiServer` is an in-process Kubernetes API server over real HTTP: the
official ``kubernetes`` client, pyinformers' informers and ``kubectl`` talk to
it through a kubeconfig, unchanged. It keeps objects in memory with one global
resourceVersion, serves lists (paged, with selectors) and watches (chunked
JSON lines, bookmarks, 410 Expired after compaction), runs garbage collection
and finalizers, can simulate Deployments becoming ready, and injects faults on
demand (dropped or stalled watches, 500s, 429s with Retry-After, latency).

Pytest fixtures live in :mod:`pyinformers.testing.pytest_plugin`
(``api_server``, ``kubeconfig``, ``api_client``). ``python -m
pyinformers.testing --port 8001 --kubeconfig kubeconfig.yaml`` runs the server
from the command line.

Without a server: :class:`ScriptedListerWatcher` and :class:`ScriptedWatch`
feed a Reflector scripted pages and events; :class:`FakeListerWatcher` is an
in-memory collection an informer lists and watches live; :class:`FakeInformer` is a cache
the test writes, whose changes reach a controller's handlers synchronously.

Waiting: :func:`eventually` (a condition, with a deadline) and
:class:`Convergence` (woken by informers' events).

The real thing: :class:`ControlPlane` runs etcd, kube-apiserver and
kube-controller-manager from local binaries (``make envtest``), envtest-style;
the ``k8s`` fixture hands a test a :class:`Cluster` on either server
(``--k8s-server=embedded|real|both``); :class:`DeploymentSimulator` makes
Deployments become available where no kubelet runs. See docs/testing.rst.
"""

import importlib
from typing import TYPE_CHECKING, Any

from pyinformers.clock import FakeClock
from pyinformers.testing.clusters import Cluster
from pyinformers.testing.fake_informer import FakeInformer
from pyinformers.testing.faults import Faults
from pyinformers.testing.httpd import RequestRecord
from pyinformers.testing.listwatch import FakeListerWatcher, ScriptedListerWatcher, ScriptedWatch
from pyinformers.testing.server import ApiServer
from pyinformers.testing.simulator import DeploymentSimulator
from pyinformers.testing.waiting import Convergence, eventually

if TYPE_CHECKING:
    from pyinformers.testing.controlplane import ComponentExited, ControlPlane, MissingBinaries

# Imported on first use, so that ``python -m pyinformers.testing.controlplane`` (the CLI)
# does not find its own module already imported by this package.
_LAZY = {name: "pyinformers.testing.controlplane" for name in ("ComponentExited", "ControlPlane", "MissingBinaries")}

__all__ = [
    "ApiServer",
    "Cluster",
    "ComponentExited",
    "ControlPlane",
    "Convergence",
    "DeploymentSimulator",
    "Faults",
    "FakeClock",
    "FakeInformer",
    "FakeListerWatcher",
    "MissingBinaries",
    "RequestRecord",
    "ScriptedListerWatcher",
    "ScriptedWatch",
    "eventually",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
