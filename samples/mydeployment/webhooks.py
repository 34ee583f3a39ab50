"""MyDeployment's conversion webhook: v1beta1 (``spec.container.image/port``) <-> v1alpha1 (``spec.image/port``).

v1alpha1 is the hub (the stored version, the one the controller reads), v1beta1
a spoke: what kubebuilder writes as ``Hub()`` on the v1alpha1 type and
``ConvertTo``/``ConvertFrom`` on the v1beta1 one. The library sets
``apiVersion`` and keeps the metadata; the functions only move fields, losing
nothing either way. ``python -m pyinformers webhooks samples.mydeployment``
prints the CRD's conversion stanza (checked in as ``deploy/webhooks/40-webhooks.yaml``).

Pure functions: thread-safe.
"""

from __future__ import annotations

from typing import Any

from pyinformers.webhook import Webhooks

__all__ = ["WEBHOOKS", "v1alpha1_to_v1beta1", "v1beta1_to_v1alpha1"]

WEBHOOKS = Webhooks("mydeployment-controller")

MYDEPLOYMENTS = WEBHOOKS.conversion(
    "demo.pyinformers.dev", "MyDeployment", hub="v1alpha1", plural="mydeployments"
)


@MYDEPLOYMENTS.to_hub("v1beta1")
def v1beta1_to_v1alpha1(obj: dict[str, Any]) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict):
        container = spec.pop("container", None) or {}
        spec.update({k: container[k] for k in ("image", "port") if k in container})


@MYDEPLOYMENTS.from_hub("v1beta1")
def v1alpha1_to_v1beta1(obj: dict[str, Any]) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict):
        container = {k: spec.pop(k) for k in ("image", "port") if k in spec}
        spec["container"] = container
