"""Run a real test control plane from the command line until SIGINT or SIGTERM.

    python -m pyinformers.testing.envtest --kubeconfig ./kubeconfig.yaml --controller-manager
    kubectl --kubeconfig ./kubeconfig.yaml get namespaces

Exits 2 with one line when the binaries are missing (``make envtest`` builds
them), 1 when a component fails to start or dies while running.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence

from pyinformers.testing.envtest._controlplane import ComponentExited, ControlPlane, MissingBinaries

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m pyinformers.testing.envtest",
        description="A real etcd + kube-apiserver (+ kube-controller-manager) on loopback, for tests and demos.",
    )
    parser.add_argument("--kubeconfig", metavar="FILE", help="write an admin kubeconfig to FILE")
    parser.add_argument(
        "--binary-dir",
        metavar="DIR",
        help="directory with etcd, kube-apiserver, kube-controller-manager",
    )
    parser.add_argument(
        "--controller-manager",
        action="store_true",
        help="also run kube-controller-manager (GC, namespaces, Deployments ...)",
    )
    parser.add_argument(
        "--simulate-workloads",
        action="store_true",
        help="mark Deployments available (there is no kubelet)",
    )
    parser.add_argument(
        "--start-timeout",
        type=float,
        default=120.0,
        help="seconds to wait for readiness (default 120)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    done = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: done.set())
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    cp = ControlPlane(
        binary_dir=args.binary_dir,
        controller_manager=args.controller_manager,
        start_timeout=args.start_timeout,
    )
    try:
        cp.start()
    except MissingBinaries as exc:
        print(exc, file=sys.stderr)
        return 2
    except (ComponentExited, TimeoutError) as exc:
        print(f"control plane failed to start: {exc}", file=sys.stderr)
        return 1
    simulator = None
    status = 0
    try:
        if args.kubeconfig:
            cp.write_kubeconfig(args.kubeconfig)
        if args.simulate_workloads:
            from pyinformers.testing._simulator import DeploymentSimulator

            simulator = DeploymentSimulator(cp.api_client())
            simulator.start()
        rss = sum(cp.rss_bytes().values()) / 2**20
        print(
            f"control plane ready at {cp.url} in {cp.start_seconds:.1f} s ({rss:.0f} MiB RSS); binaries from {cp.binaries.directory}",
            flush=True,
        )
        if args.kubeconfig:
            print(f"kubeconfig written to {args.kubeconfig}", flush=True)
        while not done.wait(1.0):
            cp.check()
    except ComponentExited as exc:
        print(exc, file=sys.stderr)
        status = 1
    finally:
        if simulator is not None:
            simulator.stop()
        cp.stop()
    print("stopped", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
