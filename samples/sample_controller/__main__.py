"""``python -m samples.sample_controller``: run the Foo controller against a cluster.

The Go sample's ``main.go``: build a client from a kubeconfig (or the
in-cluster config), start the informers, run the controller with two workers
until SIGINT/SIGTERM.
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Optional, Sequence

from pyinformers.controller import Manager
from pyinformers.record import EventRecorder
from samples._support import install_crd
from samples.sample_controller.controller import ARTIFACTS, CONTROLLER_AGENT_NAME, FooController


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m samples.sample_controller",
        description="The sample-controller port: every Foo gets an nginx Deployment at its replicas.",
    )
    parser.add_argument("--kubeconfig", help="path to a kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster)")
    parser.add_argument("--namespace", help="watch only this namespace (default: all)")
    parser.add_argument("--workers", type=int, default=2, help="reconcile worker threads (default 2)")
    parser.add_argument("--install-crd", action="store_true", help="create the Foo CRD first if it is missing")
    parser.add_argument("--metrics-port", type=int, default=8080, help="Prometheus metrics port (default 8080)")
    parser.add_argument("--health-port", type=int, default=8081, help="health probe port (default 8081)")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    return parser.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    manager = Manager(
        args.kubeconfig,
        namespace=args.namespace,
        metrics_port=args.metrics_port,
        health_port=args.health_port,
    )
    if args.install_crd:
        install_crd(manager.api_client, ARTIFACTS / "crd.yaml")
    recorder = EventRecorder(manager.api_client, CONTROLLER_AGENT_NAME)
    try:
        manager.add(FooController(manager.factory, recorder, workers=args.workers))
        manager.run()  # until SIGINT / SIGTERM
    finally:
        recorder.close(timeout=5.0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
