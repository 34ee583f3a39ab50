"""pyinformers.testing.apiserver: an in-process Kubernetes API server over real HTTP.

:class:`ApiServer` serves the official ``kubernetes`` client, pyinformers'
informers and ``kubectl`` through a kubeconfig, unchanged. It keeps objects in
memory with one global resourceVersion, serves lists (paged, with selectors)
and watches (chunked JSON lines, bookmarks, 410 Expired after compaction),
custom resources from their CRDs with structural validation, garbage
collection and finalizers, can simulate Deployments becoming ready, and
injects faults on demand (:class:`Faults`: dropped or stalled watches, 500s,
429s with Retry-After, latency). :class:`RequestRecord` is one request it saw.

Its rooms: ``_server`` (the object), ``_httpd`` and ``_http_*`` (HTTP),
``_rest`` and ``_rest_*`` (the REST verbs), ``_storage`` and ``_watch``
(objects, versions, watchers), ``_registry`` and ``_crd`` (what it serves),
``_validation``, ``_defaults``, ``_patch``, ``_gc``, ``_workloads``. It is held to transcripts recorded from a
real kube-apiserver (tests/transcripts); docs/testing.rst lists what differs.

``python -m pyinformers.testing.apiserver --port 8001 --kubeconfig kubeconfig.yaml``
runs it from the command line.
"""

from pyinformers._exports import publish
from pyinformers.testing.apiserver._faults import Faults
from pyinformers.testing.apiserver._httpd import RequestRecord
from pyinformers.testing.apiserver._server import ApiServer
from pyinformers.testing.apiserver._tls import TlsUnavailable, self_signed_certificate

__all__ = ["ApiServer", "Faults", "RequestRecord", "TlsUnavailable", "self_signed_certificate"]

publish(globals(), __all__)
