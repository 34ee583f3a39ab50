"""The update, patch and apply verbs of the embedded API server.

Owns :meth:`UpdateVerbs.update`, :meth:`UpdateVerbs.patch` (JSON, merge and
strategic merge patches, with the real server's 415 and 400 checks),
:meth:`UpdateVerbs.apply` (server-side apply, by :mod:`._apply`) and the
write they share, :meth:`UpdateVerbs._apply_update`: optimistic concurrency
on ``metadata.resourceVersion``, the ``/status`` and ``/finalize``
subresources, server-owned fields kept, defaults, schema and CRD checks,
``generation``, managed fields, admission, and the end of a deletion.

Invariants: an update that changes nothing writes nothing (no new
resourceVersion); writes to the main resource keep the stored ``.status``,
writes to ``/status`` change only ``.status``; the write that removes the
last finalizer of an object being deleted is not stored, the object goes.

Thread-safety: every read-modify-write holds the store lock (released only
while a webhook runs, then re-checked).
"""

from __future__ import annotations

import builtins
from typing import Any

import orjson

from pyinformers.testing.apiserver._apply import apply_patch, apply_scale
from pyinformers.testing.apiserver._crd import json_type
from pyinformers.testing.apiserver._defaults import apply_defaults
from pyinformers.testing.apiserver._objects import SERVER_OWNED, copy_json, same_content, spec_part
from pyinformers.testing.apiserver._patch import (
    PatchError,
    UnknownDirective,
    json_patch,
    merge_patch,
    strategic_merge_patch,
)
from pyinformers.testing.apiserver._registry import ResourceType
from pyinformers.testing.apiserver._rest_core import CRD_STORAGE_KEY, RestCore
from pyinformers.testing.apiserver._status import (
    StatusError,
    bad_request,
    conflict,
    invalid,
    not_found,
    unsupported_media_type,
)
from pyinformers.testing.apiserver._validation import check_body, normalize_times, validate_object
from pyinformers.testing.apiserver._webhooks import Attributes

__all__ = ["UpdateVerbs"]


def _json_kind(value: Any) -> str:
    """How Go's JSON decoder names a JSON value's type in its errors."""
    kind = json_type(value)
    return {"boolean": "bool", "integer": "number"}.get(kind, kind)


class UpdateVerbs(RestCore):
    """update, patch and apply, and the write they share."""

    def update(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        body: Any,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        field_validation: str = "Warn",
        warnings: builtins.list | None = None,
        user: str | None = None,
        field_manager: str | None = None,
    ) -> dict:
        """Replace an object (or its ``status``/``finalize`` subresource) with ``body`` (consumed)."""
        ns = self._ns(rt, namespace)
        obj = check_body(self.registry, rt, body, ns, name)
        obj["metadata"]["name"] = name
        attrs = self._attributes(rt, "UPDATE", ns, name, subresource, dry_run, user, warnings)
        with self.store.lock:
            old = self._get_existing(rt, ns, name)
            if attrs is not None:
                obj = self._mutate_update(rt, ns, name, attrs, obj, old)
            return self._out(
                rt,
                self._apply_update(
                    rt,
                    ns,
                    name,
                    old,
                    obj,
                    subresource=subresource,
                    dry_run=dry_run,
                    field_validation=field_validation,
                    warnings=warnings,
                    attrs=attrs,
                    field_manager=field_manager,
                ),
            )

    def _mutate_update(
        self, rt: ResourceType, ns: str, name: str, attrs: Attributes, new: dict, old: dict
    ) -> dict:
        """``new`` after the mutating webhooks (store lock held, released while they run)."""
        normalize_times(rt, new)
        apply_defaults(rt, new)
        old_view = self._out(rt, old)
        mutated = self._unlocked(lambda: self.webhooks.mutate(attrs, new, old_view)) or new
        self._still(rt, ns, name, old)
        return check_body(self.registry, rt, mutated, ns, name)

    def _apply_update(
        self,
        rt: ResourceType,
        ns: str,
        name: str,
        old: dict,
        new: dict,
        *,
        subresource: str | None,
        dry_run: bool = False,
        field_validation: str = "Warn",
        warnings: builtins.list | None = None,
        attrs: Attributes | None = None,
        field_manager: str | None = None,
        managed_subresource: str | None = None,
    ) -> dict:
        """Write ``new`` over ``old`` (store lock held). ``new`` is owned by this call.

        ``field_manager``: record the write as that manager's ``Update`` (of
        ``managed_subresource``, default ``subresource``); None: keep the managedFields
        ``new`` brings (an apply computed them).

        With ``attrs`` the validating webhooks see the result (with the lock released).
        """
        expected = new["metadata"].get("resourceVersion")
        incoming_managed = new["metadata"].get("managedFields")
        if expected and expected != old["metadata"]["resourceVersion"]:
            raise conflict(
                rt.plural,
                rt.group,
                name,
                "the object has been modified; please apply your changes to the latest version and try again",
            )
        old_meta = old["metadata"]
        if subresource == "status":
            if not rt.has_status:
                raise not_found(
                    rt.plural, rt.group, name, message=f"{rt.plural} has no status subresource"
                )
            status = new.get("status")
            new = dict(old)
            if status is None:
                new.pop("status", None)
            else:
                new["status"] = status
            new["metadata"] = dict(old_meta)
            new = self._check_schema(rt, new, field_validation, warnings, status_only=True, old=old)
        elif subresource == "finalize" and rt.storage_key == "/namespaces":
            spec = dict(old.get("spec") or {})
            spec["finalizers"] = list((new.get("spec") or {}).get("finalizers") or [])
            new = dict(old, spec=spec)
            new["metadata"] = dict(old_meta)
        elif subresource:
            raise not_found(
                rt.plural,
                rt.group,
                name,
                message=f"the server could not find the subresource {subresource!r}",
            )
        else:
            meta = new["metadata"]
            for field in SERVER_OWNED:
                if field in old_meta:
                    meta[field] = old_meta[field]
                else:
                    meta.pop(field, None)
            meta["namespace"] = old_meta.get("namespace")
            if not rt.namespaced:
                meta.pop("namespace", None)
            if rt.has_status:
                if "status" in old:
                    new["status"] = old["status"]
                else:
                    new.pop("status", None)
            normalize_times(rt, new)
            apply_defaults(rt, new)
            new = self._check_schema(rt, new, field_validation, warnings, old=old)
            meta = new["metadata"]
            validate_object(rt, new)
            self._check_crd(rt, new)
            new = self._to_storage(rt, new)
            meta = new["metadata"]
            if old_meta.get("deletionTimestamp"):
                added = set(meta.get("finalizers") or ()) - set(old_meta.get("finalizers") or ())
                if added:
                    found = "[]string{" + ", ".join(f'"{f}"' for f in sorted(added)) + "}"
                    cause = (
                        "FieldValueForbidden",
                        "metadata.finalizers",
                        f"no new finalizers can be added if the object is being deleted, found new finalizers {found}",
                    )
                    raise invalid(rt.kind, rt.group, name, [cause, cause], summary_causes=1)
            if rt.has_generation and spec_part(rt, new) != spec_part(rt, old):
                meta["generation"] = int(old_meta.get("generation") or 1) + 1
        if field_manager is not None:
            self.field_management.record(
                rt, old, new, field_manager, subresource=managed_subresource or subresource
            )
        elif incoming_managed is not None:
            new["metadata"]["managedFields"] = incoming_managed
        new["metadata"]["resourceVersion"] = old_meta["resourceVersion"]
        if attrs is not None:
            final, old_view = self._out(rt, new), self._out(rt, old)
            self._unlocked(lambda: self.webhooks.validate(attrs, final, old_view))
            self._still(rt, ns, name, old)
        if same_content(new, old) and new["metadata"].get("managedFields") == old_meta.get(
            "managedFields"
        ):
            return old
        if dry_run:
            return new
        if old_meta.get("deletionTimestamp") and not self._deletion_blocked(rt, new):
            # The write that removes the last finalizer is not stored: the object goes,
            # watchers see DELETED with its state before this write, and the answer is
            # the new state at the previous resourceVersion (the real server's behaviour).
            self._remove(rt, ns, name)
            return new
        stored = self.store.put(rt.storage_key, ns, name, new)
        if rt.storage_key == CRD_STORAGE_KEY and not subresource:
            try:
                self.registry.install_crd(stored)
            except ValueError:
                pass  # the previous versions stay served; a real server would reject the update up front
        return self._maybe_finish_deletion(rt, ns, name, stored)

    def patch(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        body: bytes,
        content_type: str,
        *,
        subresource: str | None = None,
        dry_run: bool = False,
        field_validation: str = "Warn",
        warnings: builtins.list | None = None,
        user: str | None = None,
        field_manager: str | None = None,
    ) -> dict:
        ns = self._ns(rt, namespace)
        media = (content_type or "").split(";")[0].strip().lower()
        document = self._patch_document(rt, body, media)
        attrs = self._attributes(
            rt, "UPDATE", ns, name, subresource, dry_run, user, warnings, {"kind": "PatchOptions"}
        )
        with self.store.lock:
            old = self._get_existing(rt, ns, name)
            patched = self._apply_patch(self._out(rt, old), document, media)
            if not isinstance(patched, dict):
                raise invalid(
                    rt.kind,
                    rt.group,
                    name,
                    [("FieldValueInvalid", "", "the patched document is not an object")],
                )
            patched = check_body(self.registry, rt, patched, ns, name)
            if patched["metadata"].get("name") != name:
                raise bad_request("a patch cannot change metadata.name")
            if attrs is not None:
                patched = self._mutate_update(rt, ns, name, attrs, patched, old)
            return self._out(
                rt,
                self._apply_update(
                    rt,
                    ns,
                    name,
                    old,
                    patched,
                    subresource=subresource,
                    dry_run=dry_run,
                    field_validation=field_validation,
                    warnings=warnings,
                    attrs=attrs,
                    field_manager=field_manager,
                ),
            )

    @staticmethod
    def _patch_document(rt: ResourceType, body: bytes, media: str) -> Any:
        """The parsed patch, after the media type checks (415, 400) the real server makes."""
        if media == "application/strategic-merge-patch+json" and rt.is_custom:
            raise unsupported_media_type(
                "the body of the request was in an unknown format - accepted media types include: "
                "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
            )
        if media not in (
            "application/merge-patch+json",
            "application/json-patch+json",
            "application/strategic-merge-patch+json",
        ):
            raise unsupported_media_type(details={})
        try:
            document = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise bad_request(f"error decoding patch: {exc}") from None
        if media == "application/json-patch+json" and not isinstance(document, list):
            raise bad_request(
                f"error decoding patch: json: cannot unmarshal {_json_kind(document)} into Go value of type []handlers.jsonPatchOp"
            )
        if media != "application/json-patch+json" and not isinstance(document, dict):
            raise bad_request(
                f"error decoding patch: json: cannot unmarshal {_json_kind(document)} into Go value of type map[string]interface {{}}"
            )
        return document

    def apply(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        body: bytes,
        *,
        manager: str,
        force: bool = False,
        subresource: str | None = None,
        dry_run: bool = False,
        field_validation: str = "Warn",
        warnings: builtins.list | None = None,
    ) -> tuple[int, dict]:
        """Server-side apply of ``body`` as ``manager`` (see :mod:`._apply`): (201 or 200, the object)."""
        if subresource == "scale":
            return apply_scale(
                self, rt, namespace, name, body, manager=manager, force=force, dry_run=dry_run
            )
        return apply_patch(
            self,
            rt,
            namespace,
            name,
            body,
            manager=manager,
            force=force,
            subresource=subresource,
            dry_run=dry_run,
            field_validation=field_validation,
            warnings=warnings,
        )

    @staticmethod
    def _apply_patch(old: dict, document: Any, media: str) -> Any:
        try:
            if media == "application/json-patch+json":
                return json_patch(old, document)
            apply = (
                merge_patch if media == "application/merge-patch+json" else strategic_merge_patch
            )
            return copy_json(apply(old, document))
        except UnknownDirective as exc:
            raise StatusError(500, "", str(exc)) from None
        except PatchError:
            # The real server does not say which operation failed.
            raise StatusError(
                422,
                "Invalid",
                "the server rejected our request due to an error in our request",
                details={},
            ) from None
