"""``python -m samples.mydeployment``: run the MyDeployment operator against a cluster."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import Optional, Sequence

from pyinformers.controller import Manager
from pyinformers.record import EventRecorder
from samples._support import install_crd
from samples.mydeployment.controller import ARTIFACTS, COMPONENT, MyDeploymentController


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m samples.mydeployment",
        description="Keeps each MyDeployment's Deployment and Service as its spec says.",
    )
    parser.add_argument("--kubeconfig", help="path to a kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster)")
    parser.add_argument("--namespace", help="watch only this namespace (default: all)")
    parser.add_argument("--workers", type=int, default=2, help="reconcile worker threads (default 2)")
    parser.add_argument("--install-crd", action="store_true", help="create the MyDeployment CRD first if missing")
    parser.add_argument("--metrics-port", type=int, default=8080, help="Prometheus metrics port (default 8080)")
    parser.add_argument("--health-port", type=int, default=8081, help="health probe port (default 8081)")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    manager = Manager(
        args.kubeconfig, namespace=args.namespace, metrics_port=args.metrics_port, health_port=args.health_port
    )
    if args.install_crd:
        install_crd(manager.api_client, ARTIFACTS / "crd.yaml")
    recorder = EventRecorder(manager.api_client, COMPONENT)
    try:
        manager.add(MyDeploymentController(manager.factory, recorder, workers=args.workers))
        manager.run()  # until SIGINT / SIGTERM
    finally:
        recorder.close(timeout=5.0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
