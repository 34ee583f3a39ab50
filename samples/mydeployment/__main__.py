"""``python -m samples.mydeployment``: run the MyDeployment operator against a cluster."""

from __future__ import annotations

import sys
from typing import Optional, Sequence

from samples._support import run_operator
from samples.mydeployment.controller import ARTIFACTS, COMPONENT, MyDeploymentController


def main(argv: Optional[Sequence[str]] = None) -> int:
    return run_operator(
        argv,
        prog="python -m samples.mydeployment",
        description="Keeps each MyDeployment's Deployment and Service as its spec says.",
        crd_path=ARTIFACTS / "crd.yaml",
        component=COMPONENT,
        build=lambda factory, recorder, workers: MyDeploymentController(factory, recorder, workers=workers),
    )


if __name__ == "__main__":
    sys.exit(main())
