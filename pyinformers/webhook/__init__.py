"""pyinformers.webhook: admission and conversion webhooks, written next to the controller.

* :class:`Webhooks` -- the registry of one operator: ``@webhooks.validating(RES)``,
  ``@webhooks.mutating(RES)`` and ``webhooks.conversion(group, kind, hub=...)``.
* :class:`AdmissionRequest` -- what a handler gets (object, old object,
  operation, user info, dry run); it answers ``None``/:class:`Allowed`,
  :class:`Denied`, or (mutating) the changed object, from which the library
  computes the JSON Patch (:func:`json_patch`).
* :class:`Conversion` -- hub and spoke conversion between the versions of a
  custom resource, behind a ``ConversionReview``.
* :func:`configurations` and :func:`conversion_stanza` with a
  :class:`ClientConfig` -- the webhook configurations and CRD stanzas that
  point the API server at them (``python -m pyinformers webhooks MODULE``).

The webhook server that serves a registry over HTTPS is the Manager's
(:mod:`pyinformers.manager`). docs/webhooks.rst walks through writing,
serving, configuring and testing them.

Layering: imports ``api`` only.
"""

from pyinformers._exports import publish
from pyinformers.webhook._admission import (
    ADMISSION_V1,
    AdmissionRequest,
    AdmissionWebhook,
    Allowed,
    Denied,
    Operation,
    ReviewError,
    UserInfo,
    review,
)
from pyinformers.webhook._conversion import (
    CONVERSION_V1,
    Conversion,
    ConversionError,
    review_conversion,
)
from pyinformers.webhook._manifests import ClientConfig, configurations, conversion_stanza
from pyinformers.webhook._patch import json_patch
from pyinformers.webhook._registry import CONVERT_PATH, Webhooks

__all__ = [
    "ADMISSION_V1",
    "CONVERSION_V1",
    "CONVERT_PATH",
    "AdmissionRequest",
    "AdmissionWebhook",
    "Allowed",
    "ClientConfig",
    "Conversion",
    "ConversionError",
    "Denied",
    "Operation",
    "ReviewError",
    "UserInfo",
    "Webhooks",
    "configurations",
    "conversion_stanza",
    "json_patch",
    "review",
    "review_conversion",
]

publish(globals(), __all__)
