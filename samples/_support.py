"""What the samples share: their command line. Installing a CRD and waiting for convergence
live in the library (:func:`pyinformers.controller.install_crd`,
:class:`pyinformers.testing.Convergence`); they are re-exported here for the samples' imports.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

from pyinformers.cache import drop_managed_fields
from pyinformers.controller import install_crd, load_yaml
from pyinformers.testing import Convergence

__all__ = ["Convergence", "install_crd", "load_yaml", "sample_operator"]

logger = logging.getLogger(__name__)


def sample_operator(
    name: str,
    *,
    prog: str,
    description: str,
    crd_path: str | os.PathLike[str],
    component: str,
    build: Callable[[Any, Any, Any], Any],
    webhooks: Any = None,
    cache_transform: Callable[[Any], Any] | None = drop_managed_fields,
) -> Any:
    """A sample's :class:`~pyinformers.manager.Operator`: the library's flags plus ``--install-crd``.

    ``build(factory, recorder, options)`` makes the controller; ``cache_transform``
    is the Operator's. ``--install-crd``
    creates the sample's CRD at start-up (it needs ``create`` on
    customresourcedefinitions, which the generated RBAC does not grant: in a
    cluster, apply the CRD with kubectl instead).
    """
    from pyinformers.manager import Operator

    def add_arguments(parser: Any) -> None:
        parser.add_argument(
            "--install-crd",
            action="store_true",
            help="create the custom resource's CRD first if missing (local use; not in the RBAC)",
        )

    def setup(manager: Any, options: Any) -> None:
        if options.install_crd:
            install_crd(manager.api_client, crd_path)

    return Operator(
        name,
        build,
        event_component=component,
        description=description,
        prog=prog,
        add_arguments=add_arguments,
        setup=setup,
        webhooks=webhooks,
        cache_transform=cache_transform,
    )
