"""The resource verbs of the embedded API server's HTTP layer, as calls on the REST layer.

Owns the step from a routed, authorized request (verb, :class:`~._http_routing.Route`,
query, body) to a :class:`~._rest.RestApi` call and its ``(status code,
answer)``: decoding the body by its Content-Type, the write options
(``dryRun``, ``fieldValidation``, ``fieldManager``, ``force``), server-side
apply, the ``/scale`` and ``/token`` subresources, and DeleteOptions taken
from the body and the query. Watches are not here (:mod:`._http_watch`).

Invariant: the field manager's options are checked (422) before anything is
written, as the real server does.

Thread-safety: free functions; the REST layer serialises the writes.
"""

from __future__ import annotations

from typing import Any, TypedDict

import orjson

from pyinformers.testing.apiserver._auth import Authenticator, User
from pyinformers.testing.apiserver._decode import decode_body
from pyinformers.testing.apiserver._http_routing import Route
from pyinformers.testing.apiserver._managed import check_field_manager, manager_name
from pyinformers.testing.apiserver._options import go_bool, parse_list_options
from pyinformers.testing.apiserver._rest import RestApi
from pyinformers.testing.apiserver._scale import scale_of
from pyinformers.testing.apiserver._status import bad_request, invalid, method_not_allowed

__all__ = ["APPLY_PATCH", "call"]

APPLY_PATCH = "application/apply-patch+yaml"


def call(
    rest: RestApi,
    auth: Authenticator,
    verb: str,
    route: Route,
    query: dict,
    body: bytes,
    content_type: str,
    user: User,
    warnings: list,
    user_agent: str = "",
) -> tuple[int, Any]:
    """Answer a resource request other than a watch: (HTTP status, answer)."""
    rt, ns, sub = route.resource, route.namespace, route.subresource
    name = route.name or ""  # the verbs on one object were routed with a name
    dry_run = query.get("dryRun") == "All"
    validation = query.get("fieldValidation") or "Warn"
    if verb == "list":
        return 200, rest.list(rt, ns, parse_list_options(query))
    manager = None
    if verb in ("create", "update", "patch") and sub != "token":
        applying = verb == "patch" and content_type.split(";")[0].strip().lower() == APPLY_PATCH
        manager = _field_manager(verb, query, user_agent, applying=applying)
        if applying:
            force = bool(go_bool(query.get("force")))
            code, applied = rest.apply(
                rt,
                ns,
                name,
                body,
                manager=manager,
                force=force,
                subresource=sub,
                dry_run=dry_run,
                field_validation=validation,
                warnings=warnings,
            )
            return code, scale_of(applied) if sub == "scale" else applied
    if sub == "scale":
        return 200, _scale(rest, verb, route, body, content_type, dry_run, manager)
    if sub == "token":
        return 201, rest.token_request(
            rt, ns, name, decode_body(body, content_type, "TokenRequest"), auth
        )
    if verb == "get":
        return 200, rest.get(rt, ns, name)
    write: _WriteOptions = {
        "dry_run": dry_run,
        "field_validation": validation,
        "warnings": warnings,
        "user": user.name,
        "field_manager": manager,
    }
    if verb == "create":
        return 201, rest.create(rt, ns, decode_body(body, content_type, rt.kind), **write)
    if verb == "update":
        document = decode_body(body, content_type, rt.kind)
        return 200, rest.update(rt, ns, name, document, subresource=sub, **write)
    if verb == "patch":
        return 200, rest.patch(rt, ns, name, body, content_type, subresource=sub, **write)
    if verb in ("delete", "deletecollection"):
        options = _delete_options(body, query)
        if verb == "delete":
            return rest.delete(
                rt, ns, name, options, dry_run=dry_run, user=user.name, warnings=warnings
            )
        selectors = {k: v for k, v in query.items() if k in ("labelSelector", "fieldSelector")}
        return 200, rest.delete_collection(rt, ns, parse_list_options(selectors), options)
    raise method_not_allowed()


class _WriteOptions(TypedDict):
    """What create, update and patch take alike: the request's options and who makes it."""

    dry_run: bool
    field_validation: str
    warnings: list
    user: str | None
    field_manager: str | None


def _scale(
    rest: RestApi,
    verb: str,
    route: Route,
    body: bytes,
    content_type: str,
    dry_run: bool,
    manager: str | None,
) -> dict:
    rt, ns, name = route.resource, route.namespace, route.name or ""
    if verb == "get":
        return scale_of(rest.get(rt, ns, name))
    if verb == "update":
        scale = decode_body(body, content_type, "Scale")
        return scale_of(
            rest.set_replicas(rt, ns, name, scale, dry_run=dry_run, field_manager=manager)
        )
    return scale_of(
        rest.patch_scale(rt, ns, name, body, content_type, dry_run=dry_run, field_manager=manager)
    )


def _field_manager(verb: str, query: dict, user_agent: str, *, applying: bool) -> str:
    """The manager a write is recorded under, after the real server's checks of the options (422)."""
    options = {"create": "CreateOptions", "update": "UpdateOptions", "patch": "PatchOptions"}[verb]
    requested = query.get("fieldManager")
    cause = check_field_manager(requested, options, apply_patch=applying)
    if cause is None and "force" in query and not applying:
        cause = ("FieldValueForbidden", "force", "may not be specified for non-apply patch")
    if cause is not None:
        raise invalid(options, "meta.k8s.io", "", [cause])
    return manager_name(requested, user_agent)


def _decode(body: bytes) -> Any:
    """DeleteOptions and other small JSON bodies."""
    if not body:
        raise bad_request("the request has no body")
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise bad_request(f"the request body is not valid JSON: {exc}") from None


def _delete_options(body: bytes, query: dict) -> dict:
    options: dict = {}
    if body.strip():
        options = _decode(body)
        if not isinstance(options, dict):
            raise bad_request("DeleteOptions must be a JSON object")
    if "propagationPolicy" in query:
        options["propagationPolicy"] = query["propagationPolicy"]
    if "orphanDependents" in query:
        options["orphanDependents"] = query["orphanDependents"].lower() == "true"
    if "gracePeriodSeconds" in query:
        options["gracePeriodSeconds"] = query["gracePeriodSeconds"]
    return options
