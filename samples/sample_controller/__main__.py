"""``python -m samples.sample_controller``: run the Foo controller against a cluster.

The Go sample's ``main.go``: build a client from a kubeconfig (or the
in-cluster config), start the informers, run the controller with two workers
until SIGINT/SIGTERM. The flags are the library's (:mod:`pyinformers.manager`,
``--help`` lists them); ``OPERATOR`` is also what ``python -m pyinformers rbac
samples.sample_controller`` reads to print the controller's RBAC, and
``python -m pyinformers webhooks samples.sample_controller`` its webhook
configurations (the defaulting and validating webhooks of ``webhooks.py``).

The cache shares the strings its objects repeat (:func:`~pyinformers.cache.share_strings`
after the default transform): a controller that caches a Deployment per Foo
keeps about a quarter less per Deployment, for a few microseconds of CPU per
event (docs/performance.rst).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from pyinformers.cache import chain, drop_managed_fields, share_strings
from samples._support import sample_operator
from samples.sample_controller.controller import ARTIFACTS, CONTROLLER_AGENT_NAME, FooController
from samples.sample_controller.webhooks import WEBHOOKS

OPERATOR = sample_operator(
    "sample-controller",
    prog="python -m samples.sample_controller",
    description="The sample-controller port: every Foo gets an nginx Deployment at its replicas.",
    crd_path=ARTIFACTS / "crd.yaml",
    component=CONTROLLER_AGENT_NAME,
    build=lambda factory, recorder, options: FooController(
        factory, recorder, workers=options.workers
    ),
    webhooks=WEBHOOKS,
    cache_transform=chain(drop_managed_fields, share_strings),
)


def main(argv: Sequence[str] | None = None) -> int:
    return OPERATOR.main(argv)


if __name__ == "__main__":
    sys.exit(main())
