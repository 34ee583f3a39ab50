"""MyDeployment: an operator that owns a Deployment and a Service and puts them back when they drift.

``python -m samples.mydeployment --kubeconfig FILE --install-crd`` runs it
against a cluster; ``kubectl apply -f samples/mydeployment/artifacts/example.yaml``
then creates one. See ``docs/owned-resources.rst``.
"""

from samples.mydeployment.controller import (
    ARTIFACTS,
    COMPONENT,
    MYDEPLOYMENTS,
    MyDeploymentController,
    desired_deployment,
    desired_service,
)

__all__ = [
    "ARTIFACTS",
    "COMPONENT",
    "MYDEPLOYMENTS",
    "MyDeploymentController",
    "desired_deployment",
    "desired_service",
]
