"""pyinformers.testing.envtest: a real Kubernetes control plane for tests, envtest-style.

:class:`ControlPlane` runs etcd, kube-apiserver and kube-controller-manager
from local binaries (``make envtest`` builds them from Go modules into a
per-user cache; ``KUBEBUILDER_ASSETS`` pointing at setup-envtest assets works
too), on loopback ports with generated certificates, and hands out
kubeconfigs and API clients (admin, or a ServiceAccount's). It raises
:class:`MissingBinaries` when the binaries cannot be found and
:class:`ComponentExited` when a component dies.


:func:`make_serving_certs` writes a throwaway CA and a serving certificate
(for a webhook server, say). ``python -m pyinformers.testing.envtest`` starts
one from the command line and writes its kubeconfig. See "Testing against a
real control plane" in
docs/testing.rst.
"""

from pyinformers._exports import publish
from pyinformers.testing.envtest._certs import ServingCerts, make_serving_certs
from pyinformers.testing.envtest._controlplane import ComponentExited, ControlPlane, MissingBinaries

__all__ = [
    "ComponentExited",
    "ControlPlane",
    "MissingBinaries",
    "ServingCerts",
    "make_serving_certs",
]

publish(globals(), __all__)
