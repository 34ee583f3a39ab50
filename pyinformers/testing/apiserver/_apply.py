"""The apply verb of the embedded server: ``PATCH`` with ``application/apply-patch+yaml``.

:func:`apply_patch` answers an apply request on the main resource,
``/status`` or ``/scale`` as kube-apiserver 1.36 does: the body (YAML or JSON)
must be an object naming the URL's object, without ``managedFields``; the
configuration is merged by :class:`~._managed.FieldManagement` (409 with
``FieldManagerConflict`` causes on a conflict, unless forced), then written
through the REST layer's create or update path, so defaults, validation,
status resets, dry runs and the no-op rule (nothing changed: nothing written,
the resourceVersion kept) are those of every other write.

Runs under the store lock like every read-modify-write; thread-safe.
"""

from __future__ import annotations

from typing import Any

import orjson

from pyinformers.testing.apiserver._fieldmanager import ApplyConflicts, FieldManagerError
from pyinformers.testing.apiserver._managed import decode_apply_body

__all__ = ["apply_patch"]


def _errors() -> Any:
    from pyinformers.testing.apiserver import (
        _status as status,  # the embedded server's Status helpers
    )

    return status


def _conflict_error(exc: ApplyConflicts) -> Exception:
    status = _errors()
    return status.StatusError(409, "Conflict", exc.message, details={"causes": exc.causes()})


_GO_JSON_KINDS = {
    list: "array",
    str: "string",
    bool: "bool",
    int: "number",
    float: "number",
    type(None): "null",
}


def _config(rt: Any, namespace: str, name: str, body: bytes) -> dict:
    """The apply configuration, after the checks (400) the real server makes of it."""
    status = _errors()
    try:
        config = decode_apply_body(body)
    except ValueError as exc:
        raise status.bad_request(
            f"error decoding YAML: error converting YAML to JSON: {exc}"
        ) from None
    if not isinstance(config, dict):
        go_kind = _GO_JSON_KINDS.get(type(config), "object")
        raise status.bad_request(
            "error decoding YAML: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal "
            f"{go_kind} into Go value of type map[string]interface {{}}"
        )
    api_version, kind = config.get("apiVersion"), config.get("kind")
    if api_version != rt.api_version or kind != rt.kind:
        text = api_version if isinstance(api_version, str) else ""
        group, _, version = text.rpartition("/")
        raise status.bad_request(
            f"invalid object type: {group}/{version}, Kind={kind if isinstance(kind, str) else ''}"
        )
    meta = config.get("metadata")
    if meta is None:
        meta = config["metadata"] = {}
    if not isinstance(meta, dict):
        raise status.bad_request("metadata must be an object")
    named = meta.get("name")
    if named and named != name:
        raise status.bad_request(
            f"the name of the object ({named}) does not match the name on the URL ({name})"
        )
    if rt.namespaced and meta.get("namespace") and meta["namespace"] != namespace:
        raise status.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    if meta.get("managedFields") is not None:
        raise status.bad_request("metadata.managedFields must be nil")
    return config


def apply_patch(
    rest: Any,
    rt: Any,
    namespace: str | None,
    name: str,
    body: bytes,
    *,
    manager: str,
    force: bool,
    subresource: str | None = None,
    dry_run: bool = False,
    field_validation: str = "Warn",
    warnings: list | None = None,
) -> tuple[int, dict]:
    """Apply ``body`` to the object ``name`` as ``manager``: (201 created or 200, the object)."""
    status = _errors()
    ns = rest._ns(rt, namespace)
    config = _config(rt, ns, name, body)
    fields = rest.field_management
    with rest.store.lock:
        old = rest.store.get(rt.storage_key, ns, name)
        if old is None and subresource:
            raise status.not_found(rt.plural, rt.group, name)
        expected = config["metadata"].get("resourceVersion")
        if old is not None and expected and expected != old["metadata"]["resourceVersion"]:
            raise status.conflict(
                rt.plural,
                rt.group,
                name,
                "the object has been modified; please apply your changes to the latest version and try again",
            )
        try:
            merged = fields.apply(rt, old, config, manager, force=force, subresource=subresource)
        except ApplyConflicts as exc:
            raise _conflict_error(exc) from None
        except FieldManagerError as exc:
            raise status.StatusError(
                500,
                "InternalError",
                f"Internal error occurred: failed to create typed patch object: {exc}",
            ) from None
        merged["metadata"]["name"] = name
        if old is None:
            merged["metadata"].pop("resourceVersion", None)
            return 201, rest.create(
                rt,
                ns,
                merged,
                dry_run=dry_run,
                field_validation=field_validation,
                warnings=warnings,
                field_manager=None,
            )
        merged["metadata"]["resourceVersion"] = expected or None
        if not expected:
            merged["metadata"].pop("resourceVersion")
        return 200, rest._out(
            rt,
            rest._apply_update(
                rt,
                ns,
                name,
                old,
                merged,
                subresource=None if subresource == "scale" else subresource,
                dry_run=dry_run,
                field_validation=field_validation,
                warnings=warnings,
                field_manager=None,
            ),
        )


class _ScaleType:
    """What an applied Scale is checked against."""

    api_version, kind, namespaced = "autoscaling/v1", "Scale", True


_SCALE = _ScaleType()


def apply_scale(
    rest: Any,
    rt: Any,
    namespace: str | None,
    name: str,
    body: bytes,
    *,
    manager: str,
    force: bool,
    dry_run: bool = False,
) -> tuple[int, dict]:
    """Apply an ``autoscaling/v1`` Scale: ``spec.replicas`` of the parent, recorded with subresource ``scale``."""
    status = _errors()
    config = _config(_SCALE, rest._ns(rt, namespace), name, body)
    raw_spec = config.get("spec")
    spec: dict = raw_spec if isinstance(raw_spec, dict) else {}
    parent: dict[str, Any] = {
        "apiVersion": rt.api_version,
        "kind": rt.kind,
        "metadata": {"name": name},
    }
    if "replicas" in spec:
        if not isinstance(spec["replicas"], int) or isinstance(spec["replicas"], bool):
            raise status.bad_request("spec.replicas must be an integer")
        parent["spec"] = {"replicas": spec["replicas"]}
    return apply_patch(
        rest,
        rt,
        namespace,
        name,
        orjson.dumps(parent),
        manager=manager,
        force=force,
        subresource="scale",
        dry_run=dry_run,
    )
