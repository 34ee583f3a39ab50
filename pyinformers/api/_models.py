"""Typed models at the edge: convert a cached dict to the official client's model, and back.

The cache holds plain dicts (fast, compact). Users who prefer attribute access
(``deployment.spec.replicas``) convert the objects they are working on with
:func:`to_model`, which runs the official client's own deserializer, so the
result is exactly what ``AppsV1Api().read_namespaced_deployment`` would have
returned. It costs about ten times a JSON decode per object: use it in a
reconcile, never on the informer's hot path. :func:`from_model` goes back to a
dict (for the writes of :class:`~pyinformers.api.ResourceClient`).

Thread-safe: no state of its own; the shared default ``ApiClient`` is only used
for (de)serialization, which keeps no per-call state.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from typing import Any

import orjson

__all__ = ["to_model", "from_model"]

_default_lock = threading.Lock()
_default_client: Any = None


def _serializer(api_client: Any) -> Any:
    """The ApiClient to (de)serialize with: the caller's, or one built lazily (no network)."""
    global _default_client
    if api_client is not None:
        return api_client
    with _default_lock:
        if _default_client is None:
            from kubernetes.client import ApiClient, Configuration

            _default_client = ApiClient(Configuration())
        return _default_client


def _model_name(model: str | type) -> str:
    if isinstance(model, str):
        if not model:
            raise ValueError("model name is empty")
        return model
    if isinstance(model, type):
        return model.__name__
    raise TypeError(f"model must be a class or its name, got {type(model).__name__}")


def to_model(obj: Mapping[str, Any], model: str | type, *, api_client: Any = None) -> Any:
    """``obj`` (a dict as the API server sends it) as an instance of the official client's ``model``.

    ``model`` is a class of ``kubernetes.client.models`` or its name
    (``"V1Deployment"``). Raises :class:`ValueError` for an unknown model name.
    ``obj`` is not modified.
    """
    name = _model_name(model)
    import kubernetes.client.models as models

    if not hasattr(models, name) and not name.startswith(("List[", "Dict[", "Optional[")):
        raise ValueError(f"kubernetes.client.models has no model {name!r}")
    client = _serializer(api_client)
    text = orjson.dumps(obj).decode("utf-8")
    try:
        return client.deserialize(text, name, "application/json")
    except TypeError:  # pragma: no cover - the <= 36 line: deserialize(response, type)
        return client.deserialize(_LegacyResponse(text), name)


def from_model(model: Any, *, api_client: Any = None) -> Any:
    """A model instance (or a structure of them) back to plain JSON data (dicts, lists, strings).

    Keys are the API's (camelCase); unset fields are left out; timestamps are
    written the way the API server writes them (``...T10:00:00Z``), so a dict
    that went through :func:`to_model` and back compares equal to the original.
    """
    return _utc_z(_serializer(api_client).sanitize_for_serialization(model))


_UTC_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?\+00:00\Z")


def _utc_z(data: Any) -> Any:
    """Rewrite ``isoformat()`` UTC timestamps (``+00:00``) in RFC 3339 ``Z`` form, recursively."""
    if isinstance(data, dict):
        return {key: _utc_z(value) for key, value in data.items()}
    if isinstance(data, list):
        return [_utc_z(value) for value in data]
    if isinstance(data, str) and _UTC_ISO.match(data):
        return data[:-6] + "Z"
    return data


class _LegacyResponse:  # pragma: no cover - only for kubernetes <= 36
    """The shape the old ``ApiClient.deserialize(response, type)`` reads: ``.data`` text."""

    def __init__(self, data: str) -> None:
        self.data = data
