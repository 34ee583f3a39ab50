"""The Foo webhooks: ``spec.replicas`` defaults to 1; ``spec.deploymentName`` is a DNS-1123 label, fixed at create.

What kubebuilder scaffolds as ``foo_webhook.go`` (a ``CustomDefaulter`` and a
``CustomValidator``), as two handlers on one :class:`~pyinformers.webhook.Webhooks`.
``python -m pyinformers webhooks samples.sample_controller`` prints their
configurations (checked in as ``deploy/40-webhooks.yaml``); the operator
serves them with ``--webhook-bind-address``, ``--webhook-cert-file`` and
``--webhook-key-file``.

Both handlers are pure functions of the request: thread-safe.
"""

from __future__ import annotations

import re
from typing import Any

from pyinformers.webhook import AdmissionRequest, Denied, Webhooks
from samples.sample_controller.controller import FOOS

__all__ = ["WEBHOOKS", "default_foo", "validate_foo"]

WEBHOOKS = Webhooks("sample-controller")

_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")


def _label_error(value: Any) -> str | None:
    """Why ``value`` is not a DNS-1123 label (the API server's wording), or None."""
    if not isinstance(value, str) or not value:
        return "Required value"
    if len(value) > 63:
        return f'Invalid value: "{value}": must be no more than 63 characters'
    if not _DNS1123_LABEL.fullmatch(value):
        return (
            f'Invalid value: "{value}": a lowercase RFC 1123 label must consist of lower case alphanumeric '
            "characters or '-', and must start and end with an alphanumeric character"
        )
    return None


@WEBHOOKS.mutating(
    FOOS, name="default.foos.samplecontroller.k8s.io", operations=["CREATE", "UPDATE"]
)
def default_foo(request: AdmissionRequest[Any]) -> None:
    """``spec.replicas`` is 1 unless given (the Deployment the controller makes follows it)."""
    if request.object is None:  # registered for CREATE and UPDATE only: there is always one
        return
    spec = request.object.setdefault("spec", {})
    if spec.get("replicas") is None:
        spec["replicas"] = 1


@WEBHOOKS.validating(
    FOOS, name="validate.foos.samplecontroller.k8s.io", operations=["CREATE", "UPDATE"]
)
def validate_foo(request: AdmissionRequest[Any]) -> Denied | None:
    """``spec.deploymentName`` is a DNS-1123 label and may not change after create."""
    name = ((request.object or {}).get("spec") or {}).get("deploymentName")
    problem = _label_error(name)
    if problem is not None:
        return Denied(f"spec.deploymentName: {problem}", reason="Invalid", code=422)
    if request.old_object is not None:
        before = (request.old_object.get("spec") or {}).get("deploymentName")
        if before != name:
            return Denied(
                f'spec.deploymentName: Invalid value: "{name}": field is immutable (was "{before}")',
                reason="Invalid",
                code=422,
            )
    return None
