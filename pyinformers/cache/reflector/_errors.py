"""How a :class:`~pyinformers.cache.reflector._reflector.Reflector` words a failure.

Every list or watch failure becomes one log line and the reflector's
``last_error``: :func:`describe_error` puts the error on one line, and
:func:`hint` adds what to check when retrying alone cannot fix it (a
selector the server refuses, a resource it does not serve).
:class:`MalformedEvent` is the error a reflector reports for a watch event
it cannot key.

Thread-safety: pure functions and an exception type.
"""

from __future__ import annotations

from typing import Any

from pyinformers.api._errors import BadRequest, Forbidden, Invalid, NotFound
from pyinformers.api._permissions import MissingPermission, permission_advice
from pyinformers.api._resource import Resource

__all__ = ["MalformedEvent", "describe_error", "hint"]


class MalformedEvent(ValueError):
    """A watch event whose object cannot be keyed (no ``metadata``, or no ``metadata.name``)."""


def describe_error(error: BaseException) -> str:
    """``Type: message`` on one line (``Type`` alone for an empty message)."""
    text = " ".join(str(error).split())
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def hint(
    error: BaseException, resource: Any, *, verb: str = "", namespace: str | None = None
) -> str:
    """What to check when retrying alone cannot fix ``error`` ("" when there is nothing to add).

    A 403 means the RBAC lacks ``verb`` on ``resource`` in ``namespace``
    (None: cluster-wide): the hint says what to add to which Role.
    A 400 (or 422) means the request itself is wrong, typically a selector.
    A 404 on a collection means the server does not serve the resource at
    all: for a custom resource (a group with a dot, like ``example.com``) its
    CustomResourceDefinition (or API service) is not installed; for a
    built-in group the version is not served (removed, or not enabled).
    ``resource`` is the lister-watcher's
    :class:`~pyinformers.api._resource.Resource` (None: unknown).
    """
    if isinstance(error, Forbidden) and not isinstance(error, MissingPermission):
        if not verb or not isinstance(resource, Resource):
            return ""
        return f" -- {permission_advice(resource, verb, namespace)}; retrying"
    if isinstance(error, (BadRequest, Invalid)):
        return (
            " -- the server refuses the request itself (a label or field selector it does not "
            "support?): retrying cannot fix that; check the informer's selectors"
        )
    if not isinstance(error, NotFound) or resource is None:
        return ""
    if "." in resource.group:
        return (
            f" -- the server does not serve {resource.group_resource} ({resource.api_version}): "
            f"is the CRD installed? (kubectl get crd {resource.group_resource}); retrying"
        )
    return (
        f" -- the server does not serve {resource.plural} in {resource.api_version}: "
        "is this API version available on this cluster? (kubectl api-resources); retrying"
    )
