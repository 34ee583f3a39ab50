"""pyinformers.scaffold: a new operator project in one command, kubebuilder's way.

* :func:`init_project` (``python -m pyinformers init NAME --group G``): a
  project that installs, runs (``make run``: on an in-process API server) and
  passes its tests from the first minute: the package with its
  :class:`~pyinformers.manager.Operator`, tests on either server, a Makefile,
  a Containerfile and ``deploy/``.
* :func:`create_api` (``python -m pyinformers create api --version V --kind K``):
  a resource's types (:mod:`pyinformers.crd`), its CRD, a controller that owns
  a ConfigMap and reports ``Ready``, an example and its tests; for a kind the
  project has, another version in the same CRD (:func:`version_note` says
  what that needs).
* :func:`create_webhook` (``python -m pyinformers create webhook --version V
  --kind K --defaulting --validation --conversion``): the kind's webhooks,
  served by the operator, and their tests.
* :func:`render_manifests`, :func:`write_manifests`, :func:`manifest_drift`
  (``make manifests``): deploy/'s CRDs, RBAC, Deployment and webhook
  configurations derived from the code.

Commands validate every name by Kubernetes' and Python's rules and write all
or nothing; a file the user edited is never overwritten without ``force``.
See docs/quickstart.rst.
"""

from pyinformers._exports import publish
from pyinformers.scaffold._names import ScaffoldError
from pyinformers.scaffold._project import (
    create_api,
    create_webhook,
    init_project,
    manifest_drift,
    render_manifests,
    version_note,
    write_manifests,
)

__all__ = [
    "ScaffoldError",
    "create_api",
    "create_webhook",
    "init_project",
    "manifest_drift",
    "render_manifests",
    "version_note",
    "write_manifests",
]

publish(globals(), __all__)
