"""A Python port of kubernetes/sample-controller: Foos that own nginx Deployments.

``python -m samples.sample_controller --kubeconfig FILE`` runs it against a
cluster (after ``kubectl apply -f samples/sample_controller/artifacts/crd.yaml``,
or with ``--install-crd``). See ``docs/porting.rst`` for the walk-through.
"""

from samples.sample_controller.controller import (
    ARTIFACTS,
    CONTROLLER_AGENT_NAME,
    ERR_RESOURCE_EXISTS,
    FOOS,
    MESSAGE_RESOURCE_EXISTS,
    MESSAGE_RESOURCE_SYNCED,
    SUCCESS_SYNCED,
    FooController,
    ResourceExistsError,
    new_deployment,
)

__all__ = [
    "ARTIFACTS",
    "CONTROLLER_AGENT_NAME",
    "ERR_RESOURCE_EXISTS",
    "FOOS",
    "FooController",
    "MESSAGE_RESOURCE_EXISTS",
    "MESSAGE_RESOURCE_SYNCED",
    "ResourceExistsError",
    "SUCCESS_SYNCED",
    "new_deployment",
]
