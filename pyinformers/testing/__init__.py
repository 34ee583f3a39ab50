"""pyinformers.testing: the kit for testing controllers, with two servers beside it.

The kit (imported eagerly, cheap: no server code is loaded):

* :class:`FakeInformer` -- a cache the test writes, whose changes reach a
  controller's handlers synchronously;
* :class:`ScriptedListerWatcher` and :class:`ScriptedWatch` feed a Reflector
  scripted pages and events; :class:`FakeListerWatcher` is an in-memory
  collection an informer lists and watches live;
* :func:`eventually` (a condition, with a deadline) and :class:`Convergence`
  (woken by informers' events); :class:`FakeClock`;
* :class:`Cluster` -- what the ``k8s`` fixture hands a test, on either server;
  :class:`DeploymentSimulator` makes Deployments available where no kubelet runs.

The servers, each a package of its own, loaded only when used:

* :mod:`pyinformers.testing.apiserver` -- :class:`ApiServer`, an in-process
  Kubernetes API server over real HTTP, held to transcripts of a real one
  (``python -m pyinformers.testing.apiserver``, or ``python -m pyinformers.testing``);
* :mod:`pyinformers.testing.envtest` -- :class:`ControlPlane`, a real etcd +
  kube-apiserver + kube-controller-manager from local binaries (``make
  envtest``; ``python -m pyinformers.testing.envtest``).

Pytest fixtures live in :mod:`pyinformers.testing.pytest_plugin` (``api_server``,
``kubeconfig``, ``api_client``, ``k8s``). See docs/testing.rst. The library
never imports this package.

Webhooks: :func:`install_webhooks` serves a
:class:`~pyinformers.webhook.Webhooks` from the test process and configures
either server to call it (envtest's WebhookInstallOptions; docs/webhooks.rst).
"""

from pyinformers._exports import lazy_face, publish
from pyinformers.clock import FakeClock
from pyinformers.testing._fake_informer import FakeInformer
from pyinformers.testing._listwatch import FakeListerWatcher, ScriptedListerWatcher, ScriptedWatch
from pyinformers.testing._waiting import Convergence, eventually

_LAZY = {
    "ApiServer": "pyinformers.testing.apiserver",
    "Faults": "pyinformers.testing.apiserver",
    "RequestRecord": "pyinformers.testing.apiserver",
    "ComponentExited": "pyinformers.testing.envtest",
    "ControlPlane": "pyinformers.testing.envtest",
    "MissingBinaries": "pyinformers.testing.envtest",
    "Cluster": "pyinformers.testing._clusters",
    "DeploymentSimulator": "pyinformers.testing._simulator",
    "InstalledWebhooks": "pyinformers.testing._webhook_install",
    "install_webhooks": "pyinformers.testing._webhook_install",
}

__all__ = [
    "ApiServer",
    "Cluster",
    "ComponentExited",
    "ControlPlane",
    "Convergence",
    "DeploymentSimulator",
    "FakeClock",
    "FakeInformer",
    "FakeListerWatcher",
    "Faults",
    "InstalledWebhooks",
    "MissingBinaries",
    "RequestRecord",
    "ScriptedListerWatcher",
    "ScriptedWatch",
    "eventually",
    "install_webhooks",
]

publish(globals(), __all__)
__getattr__, __dir__ = lazy_face(__name__, _LAZY, globals())
