"""The ``/scale`` and ``/token`` subresources of the embedded API server.

Owns :meth:`SubresourceVerbs.set_replicas` (PUT of an autoscaling/v1 Scale),
:meth:`SubresourceVerbs.patch_scale` (a patch of the object's Scale) and
:meth:`SubresourceVerbs.token_request` (a ServiceAccount's TokenRequest).

Invariant: a Scale write changes only ``spec.replicas`` and goes through the
update path (:class:`~._rest_update.UpdateVerbs`), so concurrency, the no-op
rule and managed fields (recorded for ``scale``) are those of every update.

Thread-safety: the Scale writes hold the store lock; a token request only reads.
"""

from __future__ import annotations

from typing import Any

from pyinformers.testing.apiserver._objects import copy_json, meta_of, now_rfc3339
from pyinformers.testing.apiserver._registry import ResourceType
from pyinformers.testing.apiserver._rest_update import UpdateVerbs
from pyinformers.testing.apiserver._scale import replicas_from_scale, scale_of
from pyinformers.testing.apiserver._status import bad_request, conflict, invalid

__all__ = ["SubresourceVerbs"]


class SubresourceVerbs(UpdateVerbs):
    """The /scale and /token subresources."""

    def set_replicas(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        scale: Any,
        *,
        dry_run: bool = False,
        field_manager: str | None = None,
    ) -> dict:
        """PUT .../scale: set ``spec.replicas`` from an autoscaling/v1 Scale; returns the object."""
        ns = self._ns(rt, namespace)
        if not isinstance(scale, dict) or (scale.get("kind") or "Scale") != "Scale":
            other = scale.get("kind") if isinstance(scale, dict) else type(scale).__name__
            version = (
                (scale.get("apiVersion") or "v1").rsplit("/", 1)[-1]
                if isinstance(scale, dict)
                else "v1"
            )
            raise bad_request(
                f'{other} in version "{version}" cannot be handled as a Scale: converting ({version}.{other}) to (autoscaling.Scale): unknown conversion'
            )
        try:
            replicas = replicas_from_scale(scale)
        except ValueError:
            raise invalid(
                "Scale",
                "autoscaling",
                name,
                [("FieldValueInvalid", "spec.replicas", "must be greater than or equal to 0")],
            ) from None
        expected = meta_of(scale).get("resourceVersion")
        with self.store.lock:
            old = self._get_existing(rt, ns, name)
            if expected and expected != old["metadata"]["resourceVersion"]:
                raise conflict(
                    rt.plural,
                    rt.group,
                    name,
                    "the object has been modified; please apply your changes to the latest version and try again",
                )
            new = copy_json(old)
            new.setdefault("spec", {})["replicas"] = replicas
            new["metadata"].pop("resourceVersion", None)
            return self._out(
                rt,
                self._apply_update(
                    rt,
                    ns,
                    name,
                    old,
                    new,
                    subresource=None,
                    dry_run=dry_run,
                    field_manager=field_manager,
                    managed_subresource="scale",
                ),
            )

    def patch_scale(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        body: bytes,
        content_type: str,
        *,
        dry_run: bool = False,
        field_manager: str | None = None,
    ) -> dict:
        """PATCH .../scale: patch the object's Scale, then set its replicas; returns the object."""
        ns = self._ns(rt, namespace)
        media = (content_type or "").split(";")[0].strip().lower()
        document = self._patch_document(rt, body, media)
        with self.store.lock:
            scale = scale_of(self._get_existing(rt, ns, name))
            return self.set_replicas(
                rt,
                ns,
                name,
                self._apply_patch(scale, document, media),
                dry_run=dry_run,
                field_manager=field_manager,
            )

    def token_request(
        self, rt: ResourceType, namespace: str | None, name: str, body: Any, auth: Any
    ) -> dict:
        """POST .../serviceaccounts/<name>/token: a TokenRequest answered with a bearer token for it."""
        ns = self._ns(rt, namespace)
        account = self._get_existing(rt, ns, name)
        spec = dict((body or {}).get("spec") or {})
        expiration = int(spec.get("expirationSeconds") or 3600)
        spec.setdefault("audiences", ["https://kubernetes.default.svc.cluster.local"])
        spec["expirationSeconds"] = expiration
        spec.setdefault("boundObjectRef", None)
        return {
            "kind": "TokenRequest",
            "apiVersion": "authentication.k8s.io/v1",
            "metadata": {
                "name": name,
                "namespace": ns,
                "uid": meta_of(account).get("uid"),
                "creationTimestamp": self._timestamp(),
            },
            "spec": spec,
            "status": {
                "token": auth.issue_service_account_token(ns, name),
                "expirationTimestamp": now_rfc3339(self._time() + expiration),
            },
        }
