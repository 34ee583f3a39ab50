"""Installing a CustomResourceDefinition and waiting until the API server serves it.

An operator that owns a custom resource (and every test of one) starts the
same way: create the CRD unless it exists, then wait, because a real API
server accepts the CRD at once but serves the new resource only once the CRD
is *Established*; an informer started earlier gets 404s and backs off.
:func:`install_crd` does both and returns the :class:`~pyinformers.api.Resource`
the CRD defines (:meth:`~pyinformers.api.Resource.from_crd`).

Threading: a plain blocking function; it waits in real time, bounded by ``timeout``.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping
from typing import Any

import yaml

from pyinformers.api._client import ResourceClient
from pyinformers.api._errors import AlreadyExists, NotFound
from pyinformers.api._resource import Resource
from pyinformers.resources import CUSTOM_RESOURCE_DEFINITIONS

__all__ = ["install_crd", "load_yaml"]

log = logging.getLogger("pyinformers.crds")


def load_yaml(path: str | os.PathLike[str]) -> Any:
    """The single YAML document in ``path``."""
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def _established(crd: Mapping[str, Any]) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def install_crd(
    api_client: Any, crd: Mapping[str, Any] | str | os.PathLike[str], *, timeout: float = 30.0
) -> Resource:
    """Create the CRD (a dict, or the path of a YAML file) unless it exists; wait until it is served.

    "Served" means the CRD reports the ``Established`` condition (when the
    server sets conditions) and a list of the new resource succeeds. Returns
    the :class:`~pyinformers.api.Resource` it defines; raises ``TimeoutError``
    when that takes longer than ``timeout`` seconds.
    """
    if not isinstance(crd, Mapping):
        crd = load_yaml(crd)
    assert isinstance(crd, Mapping)
    resource = Resource.from_crd(crd)
    crds = ResourceClient(api_client, CUSTOM_RESOURCE_DEFINITIONS)
    name = crd["metadata"]["name"]
    try:
        crds.create(crd)
        log.info("installed CRD %s", name)
    except AlreadyExists:
        log.info("CRD %s is already installed", name)
    client = ResourceClient(api_client, resource)
    deadline = time.monotonic() + timeout
    delay = 0.05
    while True:
        current = crds.get(name)
        if _established(current) or not (current.get("status") or {}).get("conditions"):
            try:
                client.list(limit=1)
                return resource
            except NotFound:
                pass
        if time.monotonic() + delay > deadline:
            raise TimeoutError(
                f"the API server did not serve {resource} (CRD {name}) within {timeout}s"
            )
        time.sleep(delay)
        delay = min(delay * 2, 1.0)
