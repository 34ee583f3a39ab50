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
* :func:`check_custom_object` validates a custom resource against its
  version's OpenAPI v3 schema (type, required, enum, bounds, lengths,
  pattern, items), fills in ``default`` values and prunes unknown fields, returning the causes and the
  pruned paths (the server turns those into ``Warning`` headers, or a 400 with
  ``fieldValidation=Strict``).

Pure functions over plain dicts; thread-safe.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = [
    "CLEANUP_FINALIZER",
    "validate_crd",
    "initial_status",
    "established_status",
    "terminating_status",
    "schema_for",
    "check_custom_object",
    "json_type",
]

CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
APPROVAL_ANNOTATION = "api-approved.kubernetes.io"
_PROTECTED = ("k8s.io", "kubernetes.io")
_TYPES = ("object", "array", "string", "integer", "number", "boolean")
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
            causes.extend(_structural_causes(schema, root, top=True))
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


def _structural_causes(schema: dict, path: str, *, top: bool = False) -> list[_Cause]:
    """A structural schema: every node that specifies fields or items has a type (the real rule, reduced)."""
    causes: list[_Cause] = []
    kind = schema.get("type")
    preserve = (
        schema.get("x-kubernetes-preserve-unknown-fields") is True
        or schema.get("x-kubernetes-int-or-string") is True
    )
    if kind is not None and kind not in _TYPES:
        causes.append(
            (
                "FieldValueNotSupported",
                f"{path}.type",
                f"Unsupported value: {_go(kind)}: supported values: "
                + ", ".join(f'"{t}"' for t in _TYPES),
            )
        )
    if top and kind != "object":
        causes.append(
            (
                "FieldValueRequired" if kind is None else "FieldValueInvalid",
                f"{path}.type",
                "Required value: must be object at the root"
                if kind is None
                else f"Invalid value: {_go(kind)}: must be object at the root",
            )
        )
    elif (
        kind is None
        and not preserve
        and any(k in schema for k in ("properties", "items", "additionalProperties"))
    ):
        causes.append(
            (
                "FieldValueRequired",
                f"{path}.type",
                "Required value: must not be empty for specified object fields",
            )
        )
    properties = schema.get("properties")
    if properties is not None:
        if not isinstance(properties, dict):
            causes.append(
                (
                    "FieldValueInvalid",
                    f"{path}.properties",
                    f"Invalid value: {_go(properties)}: must be an object",
                )
            )
        else:
            for key, sub in properties.items():
                if not isinstance(sub, dict):
                    causes.append(
                        (
                            "FieldValueInvalid",
                            f"{path}.properties[{key}]",
                            f"Invalid value: {_go(sub)}: must be an object",
                        )
                    )
                else:
                    causes.extend(_structural_causes(sub, f"{path}.properties[{key}]"))
    items = schema.get("items")
    if items is not None:
        if not isinstance(items, dict):
            causes.append(
                (
                    "FieldValueInvalid",
                    f"{path}.items",
                    f"Invalid value: {_go(items)}: must be a schema",
                )
            )
        else:
            causes.extend(_structural_causes(items, f"{path}.items"))
    for key in ("required", "enum"):
        value = schema.get(key)
        if value is not None and not isinstance(value, list):
            causes.append(
                (
                    "FieldValueInvalid",
                    f"{path}.{key}",
                    f"Invalid value: {_go(value)}: must be a list",
                )
            )
    required = schema.get("required")
    if isinstance(required, list) and not all(isinstance(r, str) for r in required):
        causes.append(
            (
                "FieldValueInvalid",
                f"{path}.required",
                f"Invalid value: {_go(required)}: must be a list of field names",
            )
        )
    for flag in (
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-int-or-string",
        "nullable",
        "exclusiveMinimum",
        "exclusiveMaximum",
    ):
        if flag in schema and not isinstance(schema[flag], bool):
            causes.append(
                (
                    "FieldValueInvalid",
                    f"{path}.{flag}",
                    f"Invalid value: {_go(schema[flag])}: must be a boolean",
                )
            )
    additional = schema.get("additionalProperties")
    if additional is not None and not isinstance(additional, (bool, dict)):
        causes.append(
            (
                "FieldValueInvalid",
                f"{path}.additionalProperties",
                f"Invalid value: {_go(additional)}: must be a boolean or a schema",
            )
        )
    for key in ("minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems"):
        value = schema.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            causes.append(
                (
                    "FieldValueInvalid",
                    f"{path}.{key}",
                    f"Invalid value: {_go(value)}: must be a number",
                )
            )
    pattern = schema.get("pattern")
    if pattern is not None:
        try:
            re.compile(str(pattern))
        except re.error:
            causes.append(
                (
                    "FieldValueInvalid",
                    f"{path}.pattern",
                    f"Invalid value: {_go(pattern)}: must be a valid regular expression",
                )
            )
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


def json_type(value: Any) -> str:
    """A JSON value's type as OpenAPI names it (``integer``, ``number``, ``object`` ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _type_matches(expected: str, value: Any) -> bool:
    actual = json_type(value)
    return actual == expected or (expected == "number" and actual == "integer")


class _Checker:
    def __init__(self, message_root: str) -> None:
        self.causes: list[_Cause] = []
        self.pruned: list[str] = []
        self.message_root = message_root  # stripped from paths in messages (a /status write)

    def _label(self, path: str) -> str:
        if self.message_root and path.startswith(self.message_root):
            return path[len(self.message_root) :]
        return path

    def check(self, schema: dict, value: Any, path: str) -> Any:
        """``value`` pruned of unknown fields; records the causes found under ``path``."""
        if (
            schema.get("x-kubernetes-int-or-string") is True
            and isinstance(value, (int, str))
            and not isinstance(value, bool)
        ):
            return value
        kind = schema.get("type")
        if isinstance(kind, str) and value is not None and not _type_matches(kind, value):
            actual = json_type(value)
            self.causes.append(
                (
                    "FieldValueTypeInvalid",
                    path,
                    f'Invalid value: "{actual}": {self._label(path)} in body must be of type {kind}: "{actual}"',
                )
            )
            return value
        enum = schema.get("enum")
        if isinstance(enum, list) and value not in enum:
            supported = ", ".join(_go(e) for e in enum)
            self.causes.append(
                (
                    "FieldValueNotSupported",
                    path,
                    f"Unsupported value: {_go(value)}: supported values: {supported}",
                )
            )
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            self._bounds(schema, value, path)
        if isinstance(value, str):
            self._string(schema, value, path)
        if isinstance(value, dict):
            return self._object(schema, value, path)
        if isinstance(value, list):
            items = schema.get("items")
            for key in ("minItems", "maxItems"):
                bound = schema.get(key)
                if isinstance(bound, int) and (
                    len(value) < bound if key == "minItems" else len(value) > bound
                ):
                    word = "at least" if key == "minItems" else "at most"
                    self.causes.append(
                        (
                            "FieldValueInvalid" if key == "minItems" else "FieldValueTooMany",
                            path,
                            f"Invalid value: {len(value)}: {self._label(path)} in body should have {word} {bound} items",
                        )
                    )
            if isinstance(items, dict):
                return [self.check(items, item, f"{path}[{i}]") for i, item in enumerate(value)]
        return value

    def _bounds(self, schema: dict, value: float, path: str) -> None:
        label = self._label(path)
        low, high = schema.get("minimum"), schema.get("maximum")
        if isinstance(low, (int, float)) and not isinstance(low, bool):
            if schema.get("exclusiveMinimum") is True and value <= low:
                self.causes.append(
                    (
                        "FieldValueInvalid",
                        path,
                        f"Invalid value: {_go(value)}: {label} in body should be greater than {_go(low)}",
                    )
                )
            elif value < low:
                self.causes.append(
                    (
                        "FieldValueInvalid",
                        path,
                        f"Invalid value: {_go(value)}: {label} in body should be greater than or equal to {_go(low)}",
                    )
                )
        if isinstance(high, (int, float)) and not isinstance(high, bool):
            if schema.get("exclusiveMaximum") is True and value >= high:
                self.causes.append(
                    (
                        "FieldValueInvalid",
                        path,
                        f"Invalid value: {_go(value)}: {label} in body should be less than {_go(high)}",
                    )
                )
            elif value > high:
                self.causes.append(
                    (
                        "FieldValueInvalid",
                        path,
                        f"Invalid value: {_go(value)}: {label} in body should be less than or equal to {_go(high)}",
                    )
                )

    def _string(self, schema: dict, value: str, path: str) -> None:
        label = self._label(path)
        low, high = schema.get("minLength"), schema.get("maxLength")
        if isinstance(low, int) and len(value) < low:
            self.causes.append(
                (
                    "FieldValueInvalid",
                    path,
                    f"Invalid value: {_go(value)}: {label} in body should be at least {low} chars long",
                )
            )
        if isinstance(high, int) and len(value) > high:
            self.causes.append(
                ("FieldValueTooLong", path, f"Too long: may not be more than {high} bytes")
            )
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            try:
                if re.search(pattern, value) is None:
                    self.causes.append(
                        (
                            "FieldValueInvalid",
                            path,
                            f"Invalid value: {_go(value)}: {label} in body should match '{pattern}'",
                        )
                    )
            except re.error:
                pass

    def _object(self, schema: dict, value: dict, path: str) -> dict:
        properties = schema.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        additional = schema.get("additionalProperties")
        preserve = schema.get("x-kubernetes-preserve-unknown-fields") is True
        value = dict(value)
        for key, sub in properties.items():  # structural defaulting, before required is checked
            if key not in value and isinstance(sub, dict) and "default" in sub:
                value[key] = json.loads(json.dumps(sub["default"]))
        required = schema.get("required")
        for key in required if isinstance(required, list) else ():
            if isinstance(key, str) and key not in value:
                self.causes.append(("FieldValueRequired", _join(path, key), "Required value"))
        result = {}
        for key, item in value.items():
            sub = properties.get(key)
            child = _join(path, key)
            if isinstance(sub, dict):
                result[key] = self.check(sub, item, child)
            elif isinstance(additional, dict):
                result[key] = self.check(additional, item, child)
            elif (
                preserve
                or additional is True
                or (not properties and additional is None and schema.get("type") != "object")
                or not path
                and key in ("apiVersion", "kind", "metadata")
            ):
                result[key] = item
            else:
                self.pruned.append(child)
        return result


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def check_custom_object(
    schema: dict | None, obj: dict, *, status_only: bool = False
) -> tuple[dict, list[_Cause], list[str]]:
    """``(pruned object, causes, pruned field paths)`` of a custom resource against its schema.

    With ``status_only`` (a write to ``/status``) only ``.status`` is checked,
    and messages name fields relative to it, as the real server does.
    """
    if not isinstance(schema, dict):
        return obj, [], []
    if status_only:
        checker = _Checker("status.")
        status_schema = _dict(_dict(schema.get("properties")).get("status"))
        if "status" in obj and status_schema:
            obj = dict(obj, status=checker.check(status_schema, obj["status"], "status"))
        return obj, checker.causes, checker.pruned
    checker = _Checker("")
    pruned = checker.check(schema, obj, "")
    causes = sorted(
        checker.causes, key=lambda cause: cause[1]
    )  # by field: a stable order (the real one varies)
    return (pruned if isinstance(pruned, dict) else obj), causes, sorted(checker.pruned)
