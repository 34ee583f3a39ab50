"""``make demo``: the sample controller at work, narrated, on the embedded API server.

With no arguments the demo starts :class:`pyinformers.testing.ApiServer` (an
in-process Kubernetes API server that also simulates Deployment status),
installs the Foo CRD, runs the sample-controller port
(:mod:`samples.sample_controller`) on threads in this process, and walks
through a scenario, timing how long the world takes to converge after each
step:

1. create a Foo: its Deployment appears;
2. scale the Foo: the Deployment follows and the Foo's status catches up;
3. scale the Deployment by hand: the controller reverts it;
4. delete the Deployment: the controller recreates it;
5. delete the Foo: the garbage collector removes the Deployment;

then lists the Events the controller recorded. Exit status 0 when every step
converged; 1 (with a message saying what was seen instead) when one did not
within ``--timeout`` seconds (default 10; 60 with ``--kubeconfig``).

``--kubeconfig FILE`` runs the same scenario against a real cluster (the
Foo CRD is installed if missing; pods must really start, so give it a longer
``--timeout``). A control plane without kubelets (``python -m
pyinformers.testing.envtest``, envtest) never makes a Deployment
available: add ``--simulate-workloads`` to run
:class:`pyinformers.testing.DeploymentSimulator` beside the
controller, which plays scheduler and kubelet for the demo's Pods.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from prometheus_client import CollectorRegistry

from pyinformers.api import AlreadyExists, NotFound, ResourceClient, meta
from pyinformers.cache import SharedInformerFactory
from pyinformers.record import EventRecorder
from pyinformers.resources import DEPLOYMENTS, EVENTS
from samples._support import Convergence, install_crd
from samples.sample_controller import ARTIFACTS, CONTROLLER_AGENT_NAME, FOOS, FooController

__all__ = ["DemoFailed", "main", "run_scenario"]

FOO_NAME = "example-foo"
DEPLOYMENT_NAME = "example-foo"


class DemoFailed(Exception):
    """A step did not converge in time (the message says what was seen instead)."""


class _Narrator:
    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.steps = 0

    def say(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    def step(
        self,
        title: str,
        action: Callable[[], Any],
        convergence: Convergence,
        condition: Callable[[Any], Any],
        describe: Callable[[], str],
        timeout: float,
    ) -> None:
        """Run ``action``, then wait until ``condition(action result)`` holds; print how long it took."""
        self.steps += 1
        self.say(f"[{self.steps}] {title}")
        start = time.monotonic()
        result = action()
        value, _ = convergence.wait(lambda: condition(result), timeout)
        elapsed = time.monotonic() - start
        if not value:
            raise DemoFailed(
                f"step {self.steps} ({title}) did not converge within {timeout:g} s; now: {describe()}"
            )
        self.say(f"    converged in {elapsed * 1000:.0f} ms: {describe()}")


def _replicas(obj: dict | None) -> Any:
    return None if obj is None else (obj.get("spec") or {}).get("replicas")


def _available(obj: dict | None) -> Any:
    return None if obj is None else (obj.get("status") or {}).get("availableReplicas")


def run_scenario(
    api_client: Any, *, namespace: str = "default", timeout: float = 10.0, out: TextIO = sys.stdout
) -> None:
    """Run the narrated scenario against ``api_client``; raise :class:`DemoFailed` if a step fails.

    Installs the Foo CRD if needed, runs the controller on threads for the
    duration of the scenario, and stops everything it started before returning.
    """
    say = _Narrator(out)
    foos_client = ResourceClient(api_client, FOOS)
    deployments_client = ResourceClient(api_client, DEPLOYMENTS)
    install_crd(api_client, ARTIFACTS / "crd.yaml", timeout=timeout)
    say.say(
        "  installed CRD foos.samplecontroller.k8s.io (samples/sample_controller/artifacts/crd.yaml)"
    )
    with contextlib.ExitStack() as stack:
        # Wiring, as the Go sample's main.go does it: a factory, a recorder, the controller.
        factory = SharedInformerFactory(api_client, namespace=namespace, metrics_registry=False)
        stack.callback(factory.stop, 5.0)
        recorder = EventRecorder(api_client, CONTROLLER_AGENT_NAME)
        stack.callback(recorder.stop, 5.0)
        registry = CollectorRegistry()  # this run's metrics only
        controller = FooController(factory, recorder, workers=2, metrics_registry=registry)
        foos, deployments = factory.lister(FOOS), factory.lister(DEPLOYMENTS)
        convergence = stack.enter_context(
            Convergence([factory.informer(FOOS), factory.informer(DEPLOYMENTS)])
        )
        factory.start()
        controller.start()  # waits for the caches, then starts 2 workers
        stack.callback(controller.stop, 5.0)
        say.say(
            f"  started controller {controller.name!r} with {controller.workers} workers, namespace {namespace!r}"
        )
        say.say()

        def foo() -> dict | None:
            return foos.namespace(namespace).get(FOO_NAME)

        def deployment() -> dict | None:
            return deployments.namespace(namespace).get(DEPLOYMENT_NAME)

        def describe() -> str:
            d, f = deployment(), foo()
            parts = [
                "Foo absent"
                if f is None
                else f"Foo replicas={_replicas(f)} available={_available(f)}",
                "Deployment absent"
                if d is None
                else f"Deployment replicas={_replicas(d)} owned={bool(f) and meta.is_controlled_by(d, f)}",
            ]
            return ", ".join(parts)

        def create_foo() -> dict:
            body = {
                "apiVersion": FOOS.api_version,
                "kind": FOOS.kind,
                "metadata": {"name": FOO_NAME, "namespace": namespace},
                "spec": {"deploymentName": DEPLOYMENT_NAME, "replicas": 1},
            }
            try:
                return foos_client.create(body, namespace=namespace)
            except AlreadyExists:
                raise DemoFailed(
                    f"Foo {namespace}/{FOO_NAME} already exists; delete it first "
                    f"(kubectl delete foo {FOO_NAME} -n {namespace})"
                ) from None

        say.step(
            f"create Foo {FOO_NAME} (replicas 1): its Deployment appears, owned by the Foo",
            create_foo,
            convergence,
            lambda created: (
                (d := deployment()) is not None
                and meta.is_controlled_by(d, created)
                and _replicas(d) == 1
                and _available(foo()) == 1
            ),
            describe,
            timeout,
        )

        say.step(
            "scale the Foo to 3: the Deployment follows and the Foo's status catches up",
            lambda: foos_client.patch(FOO_NAME, {"spec": {"replicas": 3}}, namespace=namespace),
            convergence,
            lambda _: _replicas(deployment()) == 3 and _available(foo()) == 3,
            describe,
            timeout,
        )

        def scale_by_hand() -> dict:
            return deployments_client.patch(
                DEPLOYMENT_NAME, {"spec": {"replicas": 5}}, namespace=namespace
            )

        say.step(
            "scale the Deployment to 5 by hand: the controller puts it back to 3",
            scale_by_hand,
            convergence,
            # Wait until the cache has seen our edit *and* moved past it.
            lambda edited: (
                convergence.seen(
                    "Deployment", meta.object_key(edited), meta.resource_version(edited)
                )
                and (d := deployment()) is not None
                and meta.resource_version(d) != meta.resource_version(edited)
                and _replicas(d) == 3
                and _available(foo()) == 3
            ),
            describe,
            timeout,
        )

        def delete_deployment() -> str:
            uid = meta.uid(deployment() or deployments_client.get(DEPLOYMENT_NAME, namespace))
            deployments_client.delete(DEPLOYMENT_NAME, namespace, propagation_policy="Background")
            return uid

        say.step(
            "delete the Deployment: the controller recreates it, the Foo's status catches up",
            delete_deployment,
            convergence,
            lambda old_uid: (
                (d := deployment()) is not None
                and meta.uid(d) != old_uid
                and _replicas(d) == 3
                and _available(d) == 3
                and _available(foo()) == 3
            ),
            describe,
            timeout,
        )

        say.step(
            "delete the Foo: the garbage collector deletes its Deployment",
            lambda: foos_client.delete(FOO_NAME, namespace, propagation_policy="Background"),
            convergence,
            lambda _: foo() is None and deployment() is None,
            describe,
            timeout,
        )

        recorder.flush(timeout)
        say.say()
        say.say(
            f"Events recorded about Foo {FOO_NAME} (kubectl get events --field-selector involvedObject.name={FOO_NAME}):"
        )
        events = [
            e
            for e in ResourceClient(api_client, EVENTS).list(namespace).items
            if (e.get("involvedObject") or {}).get("kind") == FOOS.kind
            and (e.get("involvedObject") or {}).get("name") == FOO_NAME
        ]
        events.sort(key=lambda e: (e.get("firstTimestamp") or "", meta.name(e) or ""))
        say.say(f"  {'TYPE':<8} {'REASON':<18} {'COUNT':>5}  {'SOURCE':<18} MESSAGE")
        for e in events:
            say.say(
                f"  {e.get('type', ''):<8} {e.get('reason', ''):<18} {e.get('count', 1):>5}  "
                f"{(e.get('source') or {}).get('component', ''):<18} {e.get('message', '')}"
            )
        if not events:
            raise DemoFailed("no Events were recorded about the Foo")
        say.say()
        say.say(_reconcile_summary(registry, controller.name))


def _reconcile_summary(registry: CollectorRegistry, name: str) -> str:
    def value(metric: str, **labels: str) -> int:
        return int(registry.get_sample_value(metric, {"controller": name, **labels}) or 0)

    total = sum(
        value("controller_runtime_reconcile_total", result=r)
        for r in ("success", "error", "requeue", "requeue_after")
    )
    errors = value("controller_runtime_reconcile_errors_total")
    text = f"The controller ran {total} reconciles"
    if errors:
        text += (
            f"; {errors} raised and were retried with backoff (a write that raced a newer version"
            " of the object, or an object deleted meanwhile: the retry reads the fresher cache; -v shows them)"
        )
    return text + "."


def _api_client_for(kubeconfig: str) -> Any:
    from kubernetes import config

    return config.new_client_from_config(config_file=kubeconfig)


def main(argv: Sequence[str] | None = None, *, out: TextIO = sys.stdout) -> int:
    """Run the demo; return the process exit status (0: every step converged)."""
    parser = argparse.ArgumentParser(
        prog="python -m samples.demo", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--kubeconfig", help="run against this cluster instead of the embedded API server"
    )
    parser.add_argument(
        "--namespace", default="default", help="namespace for the demo's objects (default: default)"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds each step may take (default 10; 60 with --kubeconfig: a real garbage collector "
        "notices a new CRD's objects only at its next discovery, up to 30 s later)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="show the controller's log")
    parser.add_argument(
        "--simulate-workloads",
        action="store_true",
        help="with --kubeconfig: make Pods and Deployments become ready (a control plane without kubelets)",
    )
    args = parser.parse_args(argv)
    if args.timeout is None:
        args.timeout = 60.0 if args.kubeconfig else 10.0
    if args.simulate_workloads and not args.kubeconfig:
        parser.error(
            "--simulate-workloads needs --kubeconfig (the embedded server simulates workloads itself)"
        )
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.ERROR,
        format="    %(levelname)s %(name)s: %(message)s",
    )
    controller_log = logging.getLogger("pyinformers.controller")
    saved_level = controller_log.level
    if not args.verbose:
        # A reconcile that raises is retried; the narration counts those at the end instead.
        controller_log.setLevel(logging.CRITICAL)
    try:
        return _run(args, out)
    finally:
        controller_log.setLevel(saved_level)


def _run(args: argparse.Namespace, out: TextIO) -> int:
    started = time.monotonic()
    try:
        with contextlib.ExitStack() as stack:
            if args.kubeconfig:
                api_client = _api_client_for(args.kubeconfig)
                stack.callback(api_client.close)
                print(
                    f"pyinformers demo: the sample-controller port against {api_client.configuration.host}",
                    file=out,
                )
                if args.simulate_workloads:
                    from pyinformers.testing import DeploymentSimulator

                    simulator = stack.enter_context(
                        DeploymentSimulator(api_client, namespace=args.namespace)
                    )
                    print(
                        f"  simulating workloads in namespace {args.namespace!r} ({simulator!r})",
                        file=out,
                    )
            else:
                from pyinformers.testing import ApiServer

                server = stack.enter_context(ApiServer(simulate_workloads=True))
                api_client = server.api_client()
                stack.callback(api_client.close)
                print(
                    f"pyinformers demo: the sample-controller port on the in-process API server at {server.url}",
                    file=out,
                )
            run_scenario(api_client, namespace=args.namespace, timeout=args.timeout, out=out)
    except DemoFailed as failure:
        print(f"\nDEMO FAILED: {failure}", file=out, flush=True)
        return 1
    except (NotFound, TimeoutError) as failure:
        print(f"\nDEMO FAILED: {failure}", file=out, flush=True)
        return 1
    print(
        f"\nAll steps converged ({time.monotonic() - started:.1f} s in all).", file=out, flush=True
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
