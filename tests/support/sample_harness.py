"""What the samples' end-to-end tests share: a sample's controller running over HTTP.

:func:`running_sample` installs the sample's CRD, starts a factory, an event
recorder and the controller, and stops them in the reverse order when the
``with`` block ends. :class:`SampleHarness` is the base of each test file's
harness: waiting on the caches with a deadline (never a sleep) and reading the
Events the sample recorded. Each test file subclasses it with the clients and
lookups of its own kinds.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from pyinformers.api import ResourceClient
from pyinformers.cache import SharedInformerFactory
from pyinformers.controller import install_crd
from pyinformers.record import EventRecorder
from pyinformers.resources import EVENTS
from pyinformers.testing import Convergence

#: A cap: embedded steps take milliseconds; a real garbage collector may need 30 s to learn a
#: new CRD.
TIMEOUT = 60.0


def workload_client(k8s: Any) -> Any:
    """An admin client of the run's server (the ``k8s`` fixture), where Deployments become
    available: the embedded server simulates their Pods, a real one runs its controllers."""
    k8s.simulate_workloads(delay=0.05)
    return k8s.api_client()


@dataclasses.dataclass
class SampleHarness:
    """A running sample: its namespace, client, controller, recorder and convergence."""

    ns: str
    api_client: Any
    controller: Any
    recorder: EventRecorder
    convergence: Convergence

    def describe(self) -> str:
        """What a timeout message adds about the objects under test."""
        return ""

    def wait(self, condition: Callable[[], Any], what: str) -> Any:
        """Wait until ``condition()`` is truthy after the caches caught up; fail naming ``what``."""
        value, _ = self.convergence.wait(condition, TIMEOUT)
        assert value, f"timed out after {TIMEOUT}s waiting for {what}; {self.describe()}"
        return value

    def events(self, reason: str) -> list[dict[str, Any]]:
        """The Events of the namespace with this reason, after the recorder flushed."""
        assert self.recorder.flush(TIMEOUT)
        return [
            e
            for e in ResourceClient(self.api_client, EVENTS).list(self.ns).items
            if e.get("reason") == reason
        ]


@contextlib.contextmanager
def running_sample(
    api_client: Any,
    namespace: str,
    *,
    crd: str | os.PathLike[str],
    component: str,
    build: Callable[[SharedInformerFactory, EventRecorder], Any],
    watched: Iterable[Any],
) -> Iterator[dict[str, Any]]:
    """Run ``build(factory, recorder)``'s controller with the ``watched`` informers converging.

    Yields the :class:`SampleHarness` fields as keyword arguments, so a subclass
    is made with ``Harness(**parts, its_own=...)``.
    """
    install_crd(api_client, crd)
    with contextlib.ExitStack() as stack:
        factory = SharedInformerFactory(api_client, namespace=namespace, metrics_registry=False)
        stack.callback(factory.stop, 5.0)
        recorder = EventRecorder(api_client, component)
        stack.callback(recorder.stop, 5.0)
        controller = build(factory, recorder)
        convergence = stack.enter_context(
            Convergence([factory.informer(resource) for resource in watched])
        )
        factory.start()
        controller.start()
        stack.callback(controller.stop, 5.0)
        yield {
            "ns": namespace,
            "api_client": api_client,
            "controller": controller,
            "recorder": recorder,
            "convergence": convergence,
        }
