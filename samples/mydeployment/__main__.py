"""``python -m samples.mydeployment``: run the MyDeployment operator against a cluster.

The flags are the library's (:mod:`pyinformers.manager`, ``--help`` lists them);
``OPERATOR`` is also what ``python -m pyinformers rbac samples.mydeployment``
reads to print the operator's RBAC, and ``python -m pyinformers webhooks
samples.mydeployment`` the conversion stanza of its CRD (``webhooks.py``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from samples._support import sample_operator
from samples.mydeployment.controller import ARTIFACTS, COMPONENT, MyDeploymentController
from samples.mydeployment.webhooks import WEBHOOKS

OPERATOR = sample_operator(
    "mydeployment-controller",
    prog="python -m samples.mydeployment",
    description="Keeps each MyDeployment's Deployment and Service as its spec says.",
    crd_path=ARTIFACTS / "crd.yaml",
    component=COMPONENT,
    build=lambda factory, recorder, options: MyDeploymentController(
        factory, recorder, workers=options.workers
    ),
    webhooks=WEBHOOKS,
)


def main(argv: Sequence[str] | None = None) -> int:
    return OPERATOR.main(argv)


if __name__ == "__main__":
    sys.exit(main())
