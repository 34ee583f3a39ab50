"""``python -m samples.sample_controller``: run the Foo controller against a cluster.

The Go sample's ``main.go``: build a client from a kubeconfig (or the
in-cluster config), start the informers, run the controller with two workers
until SIGINT/SIGTERM.
"""

from __future__ import annotations

import sys
from typing import Optional, Sequence

from samples._support import run_operator
from samples.sample_controller.controller import ARTIFACTS, CONTROLLER_AGENT_NAME, FooController


def main(argv: Optional[Sequence[str]] = None) -> int:
    return run_operator(
        argv,
        prog="python -m samples.sample_controller",
        description="The sample-controller port: every Foo gets an nginx Deployment at its replicas.",
        crd_path=ARTIFACTS / "crd.yaml",
        component=CONTROLLER_AGENT_NAME,
        build=lambda factory, recorder, workers: FooController(factory, recorder, workers=workers),
    )


if __name__ == "__main__":
    sys.exit(main())
