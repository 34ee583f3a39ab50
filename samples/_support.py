"""Small helpers the samples share: installing a CRD and waiting for the world to converge.

Not part of the library: samples and their tests use them, and users may
copy them.
"""

from __future__ import annotations

import collections
import logging
import os
import threading
import time
from typing import Any, Callable, Iterable, Optional, Sequence, Union

import yaml

from pyinformers.api import meta
from pyinformers.api.client import ResourceClient
from pyinformers.api.errors import AlreadyExists, NotFound
from pyinformers.api.resource import Resource
from pyinformers.resources import CUSTOM_RESOURCE_DEFINITIONS

__all__ = ["Convergence", "install_crd", "load_yaml", "sample_operator"]

logger = logging.getLogger(__name__)


def load_yaml(path: Union[str, "os.PathLike[str]"]) -> dict:
    """The single YAML document in ``path``."""
    with open(path, "r", encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def install_crd(api_client: Any, crd: Union[dict, str, "os.PathLike[str]"], *, timeout: float = 30.0) -> Resource:
    """Create the CRD (a dict or a YAML file) unless it exists; wait until its resource is served.

    Returns the :class:`Resource` it defines. Raises :class:`TimeoutError` when
    the API server does not serve the new resource within ``timeout`` seconds.
    """
    if not isinstance(crd, dict):
        crd = load_yaml(crd)
    resource = Resource.from_crd(crd)
    try:
        ResourceClient(api_client, CUSTOM_RESOURCE_DEFINITIONS).create(crd)
        logger.info("installed CRD %s", crd["metadata"]["name"])
    except AlreadyExists:
        logger.info("CRD %s is already installed", crd["metadata"]["name"])
    # A real API server serves a new CRD only once it is Established: list until it answers.
    client = ResourceClient(api_client, resource)
    deadline = time.monotonic() + timeout
    delay = 0.05
    while True:
        try:
            client.list(limit=1)
            return resource
        except NotFound:
            if time.monotonic() + delay > deadline:
                raise TimeoutError(f"the API server did not serve {resource} within {timeout}s") from None
            time.sleep(delay)
            delay = min(delay * 2, 1.0)


class Convergence:
    """Wait until a condition over informer caches holds, woken by the informers' events.

    ``Convergence(informers)`` registers a handler on each informer that wakes
    waiters on every add, update and delete; :meth:`wait` re-evaluates its
    condition after each wake-up, so it returns as soon as the cache shows the
    awaited state, without polling. Call :meth:`close` to remove the handlers.

    The condition reads listers (the caches, as the controller sees them); it
    must not mutate cached objects. Thread-safe.
    """

    def __init__(self, informers: Iterable[Any]) -> None:
        from pyinformers.cache.informer import EventHandlerFuncs

        self._cond = threading.Condition()
        self._generation = 0
        # (kind, namespace/name) -> resourceVersions seen in events, oldest first (bounded)
        self._seen: dict[tuple[str, str], collections.deque] = {}
        handlers = EventHandlerFuncs(
            on_add=lambda obj, is_in_initial_list=False: self._wake(obj),
            on_update=lambda old, new: self._wake(new),
            on_delete=lambda obj: self._wake(None),
        )
        self._registrations = [informer.add_event_handler(handlers) for informer in informers]

    def _wake(self, obj: Any) -> None:
        with self._cond:
            if isinstance(obj, dict) and obj.get("metadata"):
                key = (str(obj.get("kind")), meta.object_key(obj))
                self._seen.setdefault(key, collections.deque(maxlen=256)).append(meta.resource_version(obj))
            self._generation += 1
            self._cond.notify_all()

    def seen(self, kind: str, key: str, resource_version: str) -> bool:
        """True once an event carried object ``kind`` ``key`` at ``resource_version``.

        Lets a condition tell "the cache moved past my write" from "the cache
        has not seen my write yet" without comparing resourceVersions (opaque).
        """
        with self._cond:
            return resource_version in self._seen.get((kind, key), ())

    def wait(self, condition: Callable[[], Any], timeout: float) -> tuple[Any, float]:
        """Block until ``condition()`` is truthy or ``timeout`` elapses.

        Returns ``(value, elapsed_seconds)``: ``value`` is the last result of the
        condition (falsy on timeout). Re-checks at least every 0.5 s as well, in
        case the awaited state needs no event (e.g. it already held).
        """
        start = time.monotonic()
        deadline = start + timeout
        with self._cond:
            while True:
                seen = self._generation
                value = condition()
                now = time.monotonic()
                if value or now >= deadline:
                    return value, now - start
                if self._generation == seen:
                    self._cond.wait(min(deadline - now, 0.5))

    def close(self) -> None:
        """Remove the handlers from the informers. Idempotent."""
        registrations, self._registrations = self._registrations, []
        for registration in registrations:
            registration.remove()

    def __enter__(self) -> "Convergence":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def sample_operator(
    name: str,
    *,
    prog: str,
    description: str,
    crd_path: Union[str, "os.PathLike[str]"],
    component: str,
    build: Callable[[Any, Any, Any], Any],
) -> Any:
    """A sample's :class:`~pyinformers.cli.Operator`: the library's flags plus ``--install-crd``.

    ``build(factory, recorder, options)`` makes the controller. ``--install-crd``
    creates the sample's CRD at start-up (it needs ``create`` on
    customresourcedefinitions, which the generated RBAC does not grant: in a
    cluster, apply the CRD with kubectl instead).
    """
    from pyinformers.cli import Operator

    def add_arguments(parser: Any) -> None:
        parser.add_argument("--install-crd", action="store_true",
                            help="create the custom resource's CRD first if missing (local use; not in the RBAC)")

    def setup(manager: Any, options: Any) -> None:
        if options.install_crd:
            install_crd(manager.api_client, crd_path)

    return Operator(name, build, event_component=component, description=description, prog=prog,
                    add_arguments=add_arguments, setup=setup)
