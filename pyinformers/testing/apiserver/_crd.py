"""CustomResourceDefinitions in the in-process API server: validation, status, schemas.

* :func:`validate_crd` checks a CRD as kube-apiserver's apiextensions
  validation does, for the rules a user meets first (name is
  ``<plural>.<group>``, approval annotation of protected ``*.k8s.io`` groups,
  scope, exactly one storage version, a structural schema per version) and
  for the shape of every field: any value of the wrong type anywhere is a
  cause, never an exception. The result is a list of ``(reason, field,
  detail)`` causes for a 422.
* :func:`initial_status` and :func:`established_status` are the status a CRD
  has in the create answer (no conditions, no accepted names) and right after
  (NamesAccepted, Established, and the API approval condition for protected
  groups); :func:`terminating_status` what a DELETE adds.
* :func:`check_custom_object` takes a custom resource through the real
  server's steps (:mod:`._structural`: prune, drop nulls, coerce metadata,
  default, validate; :mod:`._cel`: the ``x-kubernetes-validations`` rules),
  returning the causes, the pruned paths (the server turns those into
  ``Warning`` headers, or a 400 with ``fieldValidation=Strict``) and the
  warnings of ratcheted rule errors; :func:`read_defaults` is what a read
  applies.

Pure functions over plain dicts; thread-safe.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pyinformers.testing.apiserver._cel import cel_causes, rule_causes, unsupported_rules
from pyinformers.testing.apiserver._structural import (
    apply_defaults,
    crd_schema_causes,
    json_type,
    schema_nodes,
    schema_type_causes,
    structural_causes,
)
from pyinformers.testing.apiserver._structural import check_custom_object as structural_check
from pyinformers.testing.apiserver._validation import embedded_metadata_causes

__all__ = [
    "CLEANUP_FINALIZER",
    "validate_crd",
    "initial_status",
    "established_status",
    "terminating_status",
    "schema_for",
    "check_custom_object",
    "json_type",
    "read_defaults",
]

CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
APPROVAL_ANNOTATION = "api-approved.kubernetes.io"
_PROTECTED = ("k8s.io", "kubernetes.io")
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
_Cause = tuple[str, str, str]


def _go(value: Any) -> str:
    """A value as the real server's messages quote it (JSON, Go's nil as null)."""
    return json.dumps(value, separators=(",", ":"))


def _dict(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


def _is_protected(group: str) -> bool:
    return any(group == p or group.endswith("." + p) for p in _PROTECTED)


def _versions(crd: dict) -> list:
    versions = _dict(crd.get("spec")).get("versions")
    return versions if isinstance(versions, list) else []


def _storage_names(crd: dict) -> list[str]:
    return [
        str(v.get("name"))
        for v in _versions(crd)
        if isinstance(v, dict) and v.get("storage") is True
    ]


def _version_dump(version: Any) -> dict:
    """A version as Go's %v of the internal type prints it in the storage-version message."""
    v = _dict(version)
    return {
        "Name": v.get("name"),
        "Served": v.get("served") is True,
        "Storage": v.get("storage") is True,
        "Deprecated": v.get("deprecated") is True,
        "DeprecationWarning": v.get("deprecationWarning"),
        "Schema": None,
        "Subresources": None,
        "AdditionalPrinterColumns": None,
        "SelectableFields": None,
    }


def _string_field(
    causes: list[_Cause], container: dict, key: str, path: str, *, required: bool = True
) -> str | None:
    value = container.get(key)
    if value is None or value == "":
        if required:
            causes.append(("FieldValueRequired", path, "Required value"))
        return None
    if not isinstance(value, str):
        causes.append(("FieldValueInvalid", path, f"Invalid value: {_go(value)}: must be a string"))
        return None
    return value


def validate_crd(crd: Any) -> list[_Cause]:
    """The causes that make ``crd`` invalid (empty when it is valid). Never raises."""
    if not isinstance(crd, dict):
        return [("FieldValueInvalid", "", "Invalid value: the object must be a JSON object")]
    causes: list[_Cause] = []
    meta = _dict(crd.get("metadata"))
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        causes.append(
            (
                "FieldValueRequired" if spec is None else "FieldValueInvalid",
                "spec",
                "Required value"
                if spec is None
                else f"Invalid value: {_go(spec)}: must be an object",
            )
        )
        return causes
    group = _string_field(causes, spec, "group", "spec.group")
    names_value = spec.get("names")
    if not isinstance(names_value, dict):
        causes.append(
            ("FieldValueRequired", "spec.names", "Required value")
            if names_value is None
            else (
                "FieldValueInvalid",
                "spec.names",
                f"Invalid value: {_go(names_value)}: must be an object",
            )
        )
        names_value = {}
    plural = _string_field(causes, names_value, "plural", "spec.names.plural")
    kind = _string_field(causes, names_value, "kind", "spec.names.kind")
    for key in ("singular", "listKind"):
        _string_field(causes, names_value, key, f"spec.names.{key}", required=False)
    short = names_value.get("shortNames")
    if short is not None and (
        not isinstance(short, list) or not all(isinstance(s, str) for s in short)
    ):
        causes.append(
            (
                "FieldValueInvalid",
                "spec.names.shortNames",
                f"Invalid value: {_go(short)}: must be a list of strings",
            )
        )
    if plural and not _DNS_LABEL.match(plural):
        causes.append(
            (
                "FieldValueInvalid",
                "spec.names.plural",
                f"Invalid value: \"{plural}\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-'",
            )
        )
    name = meta.get("name")
    if group and plural and name != f"{plural}.{group}":
        causes.insert(
            0,
            (
                "FieldValueInvalid",
                "metadata.name",
                f'Invalid value: {_go(name)}: must be spec.names.plural+"."+spec.group',
            ),
        )
    if group and "." not in group:
        causes.append(
            (
                "FieldValueInvalid",
                "spec.group",
                f'Invalid value: "{group}": should be a domain with at least one dot',
            )
        )
    scope = spec.get("scope")
    if scope not in ("Cluster", "Namespaced"):
        causes.append(
            (
                "FieldValueNotSupported",
                "spec.scope",
                f'Unsupported value: {_go(scope)}: supported values: "Cluster", "Namespaced"',
            )
        )
    causes.extend(_version_causes(spec))
    annotations = _dict(meta.get("annotations"))
    if group and _is_protected(group) and APPROVAL_ANNOTATION not in annotations:
        causes.append(
            (
                "FieldValueRequired",
                f"metadata.annotations[{APPROVAL_ANNOTATION}]",
                f'protected groups must have approval annotation "{APPROVAL_ANNOTATION}", see https://github.com/kubernetes/enhancements/pull/1111',
            )
        )
    del kind
    return causes


def _version_causes(spec: dict) -> list[_Cause]:
    versions = spec.get("versions")
    if not isinstance(versions, list):
        if versions is None:
            return [
                (
                    "FieldValueRequired",
                    "spec.versions",
                    "Required value: must have at least one version",
                )
            ]
        return [
            (
                "FieldValueInvalid",
                "spec.versions",
                f"Invalid value: {_go(versions)}: must be a list of versions",
            )
        ]
    if not versions:
        return [
            (
                "FieldValueInvalid",
                "spec.versions",
                "Invalid value: []: must have exactly one version marked as storage version",
            )
        ]
    causes: list[_Cause] = []
    seen: set[str] = set()
    schemas = []
    for i, version in enumerate(versions):
        path = f"spec.versions[{i}]"
        if not isinstance(version, dict):
            causes.append(
                ("FieldValueInvalid", path, f"Invalid value: {_go(version)}: must be an object")
            )
            continue
        vname = _string_field(causes, version, "name", f"{path}.name")
        if vname is not None:
            if vname in seen:
                causes.append(
                    ("FieldValueDuplicate", f"{path}.name", f'Duplicate value: "{vname}"')
                )
            seen.add(vname)
        for flag in ("served", "storage", "deprecated"):
            if flag in version and not isinstance(version[flag], bool):
                causes.append(
                    (
                        "FieldValueInvalid",
                        f"{path}.{flag}",
                        f"Invalid value: {_go(version[flag])}: must be a boolean",
                    )
                )
        subresources = version.get("subresources")
        if subresources is not None and not isinstance(subresources, dict):
            causes.append(
                (
                    "FieldValueInvalid",
                    f"{path}.subresources",
                    f"Invalid value: {_go(subresources)}: must be an object",
                )
            )
        schema = _dict(version.get("schema")).get("openAPIV3Schema")
        if version.get("schema") is not None and not isinstance(version.get("schema"), dict):
            causes.append(
                (
                    "FieldValueInvalid",
                    f"{path}.schema",
                    f"Invalid value: {_go(version.get('schema'))}: must be an object",
                )
            )
        elif schema is None:
            causes.append(
                ("FieldValueRequired", f"{path}.schema.openAPIV3Schema", "Required value")
            )
        schemas.append((i, schema))
    present = [(i, s) for i, s in schemas if s is not None]
    same = len({_go(s) for _, s in present}) <= 1
    for i, schema in present:
        root = (
            "spec.validation.openAPIV3Schema"
            if same
            else f"spec.versions[{i}].schema.openAPIV3Schema"
        )
        if not isinstance(schema, dict):
            causes.append(
                ("FieldValueInvalid", root, f"Invalid value: {_go(schema)}: must be an object")
            )
        else:
            causes.extend(_schema_causes(schema, root))
        if same:
            break
    storage = [v for v in versions if isinstance(v, dict) and v.get("storage") is True]
    if len(storage) != 1 and not causes:
        dump = json.dumps([_version_dump(v) for v in versions], separators=(",", ":"))
        causes.append(
            (
                "FieldValueInvalid",
                "spec.versions",
                f"Invalid value: {dump}: must have exactly one version marked as storage version",
            )
        )
        if not storage:
            causes.append(
                (
                    "FieldValueInvalid",
                    "status.storedVersions",
                    "Invalid value: null: must have at least one stored version",
                )
            )
        else:
            first, last = storage[0].get("name"), storage[-1].get("name")
            causes.append(
                (
                    "FieldValueInvalid",
                    "status.storedVersions",
                    f"Invalid value: {_go([first])}: must have the storage version {last}",
                )
            )
    return causes


def _schema_causes(schema: dict, root: str) -> list[_Cause]:
    """A version's schema: well formed, structural, its other rules and its CEL rules, in the real server's words."""
    malformed = schema_type_causes(schema, root)
    if malformed:
        return malformed
    causes = structural_causes(schema, root)
    causes.extend(crd_schema_causes(schema, root))
    causes.extend(rule_causes(schema, root))
    if not causes:
        unsupported_rules(
            schema
        )  # logged once per rule, at install: those rules are not evaluated here
    return causes


# -- status ---------------------------------------------------------------------------------------


def _names(crd: dict) -> dict:
    names = dict(_dict(_dict(crd.get("spec")).get("names")))
    kind = str(names.get("kind") or "")
    names.setdefault("singular", kind.lower())
    names.setdefault("listKind", f"{kind}List")
    return names


def initial_status(crd: dict) -> dict:
    """The status in a CRD's create answer: nothing accepted or established yet."""
    storage = _storage_names(crd)
    return {
        "conditions": None,
        "acceptedNames": {"plural": "", "kind": ""},
        "storedVersions": storage[:1],
    }


def _condition(kind: str, status: str, reason: str, message: str, timestamp: str) -> dict:
    return {
        "type": kind,
        "status": status,
        "lastTransitionTime": timestamp,
        "reason": reason,
        "message": message,
    }


def established_status(crd: dict, timestamp: str) -> dict:
    """The status the CRD controllers write a moment after creation."""
    status = dict(_dict(crd.get("status")))
    conditions = [
        _condition("NamesAccepted", "True", "NoConflicts", "no conflicts found", timestamp),
        _condition(
            "Established",
            "True",
            "InitialNamesAccepted",
            "the initial names have been accepted",
            timestamp,
        ),
    ]
    group = str(_dict(crd.get("spec")).get("group") or "")
    approval = _dict(_dict(crd.get("metadata")).get("annotations")).get(APPROVAL_ANNOTATION)
    if _is_protected(group) and isinstance(approval, str):
        if approval.startswith(("https://", "http://")):
            conditions.append(
                _condition(
                    "KubernetesAPIApprovalPolicyConformant",
                    "True",
                    "ApprovedAnnotation",
                    f"approved in {approval}",
                    timestamp,
                )
            )
        else:
            conditions.append(
                _condition(
                    "KubernetesAPIApprovalPolicyConformant",
                    "False",
                    "UnapprovedAnnotation",
                    f"not approved: {_go(approval)}",
                    timestamp,
                )
            )
    status["conditions"] = conditions
    status["acceptedNames"] = _names(crd)
    return status


def terminating_status(crd: dict, timestamp: str) -> dict:
    status = dict(_dict(crd.get("status")))
    conditions = [
        c
        for c in status.get("conditions") or ()
        if isinstance(c, dict) and c.get("type") != "Terminating"
    ]
    conditions.append(
        _condition(
            "Terminating",
            "True",
            "InstanceDeletionPending",
            "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
            timestamp,
        )
    )
    status["conditions"] = conditions
    return status


# -- custom resources --------------------------------------------------------------------------------


def schema_for(crd: dict | None, version: str) -> dict | None:
    """The OpenAPI v3 schema of one version of a CRD (None when there is none)."""
    if not crd:
        return None
    for v in _versions(crd):
        if isinstance(v, dict) and v.get("name") == version:
            schema = _dict(v.get("schema")).get("openAPIV3Schema")
            return schema if isinstance(schema, dict) else None
    return None


def check_custom_object(
    schema: dict | None, obj: dict, *, status_only: bool = False, old: dict | None = None
) -> tuple[dict, list[_Cause], list[str], list[str]]:
    """``(object as stored, causes, pruned field paths, warnings)`` of a custom resource written against its schema.

    The structural steps (prune, nulls, metadata, defaults, OpenAPI
    validation) are :mod:`._structural`'s, the CEL rules :mod:`._cel`'s
    (``old`` is the stored object on an update: transition rules and
    ratcheting). With ``status_only`` (a write to ``/status``) only
    ``.status`` is checked, and messages name fields relative to it.
    """
    result, causes, pruned = structural_check(
        schema, obj, status_only=status_only, metadata_check=embedded_metadata_causes, old=old
    )
    if not isinstance(schema, dict):
        return result, causes, pruned, []
    if causes:
        if any(node.get("x-kubernetes-validations") for node, _ in schema_nodes(schema)):
            causes.append(
                (
                    "FieldValueInvalid",
                    "<nil>",
                    "Invalid value: null: some validation rules were not checked because the object was invalid; "
                    "correct the existing errors to complete validation",
                )
            )
        return result, causes, pruned, []
    rules = cel_causes(schema, result, old, status_only=status_only)
    return result, rules.causes, pruned, rules.warnings


def read_defaults(schema: dict | None, obj: dict) -> dict:
    """A stored custom resource as a read returns it: with the defaults its schema has now."""
    return apply_defaults(schema, obj)
