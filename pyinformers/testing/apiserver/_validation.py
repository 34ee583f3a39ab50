"""Validation of request bodies in the in-process API server.

:func:`check_body` checks what the URL decides (kind, apiVersion, namespace,
name; 400 on a mismatch) and :func:`validate_object` checks an object's
metadata the way the real server's generic validation does (422 ``Invalid``
with one cause per problem).

Pure functions; thread-safe.
"""

from __future__ import annotations

import re
from typing import Any

from pyinformers.testing.apiserver._registry import Registry, ResourceType
from pyinformers.testing.apiserver._status import bad_request, invalid

__all__ = [
    "check_body",
    "validate_object",
    "normalize_times",
    "parse_microtime",
    "dns_label_error",
    "dns_subdomain_error",
    "label_key_errors",
    "label_value_errors",
    "embedded_metadata_causes",
]

# The real server's validation messages (k8s.io/apimachinery/pkg/util/validation), worded as it words them.
_DNS_LABEL_RE = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS_SUBDOMAIN_RE = _DNS_LABEL_RE + "(\\." + _DNS_LABEL_RE + ")*"
_QUALIFIED_NAME_RE = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_RE = "(" + _QUALIFIED_NAME_RE + ")?"
_DNS_LABEL = re.compile(_DNS_LABEL_RE + r"\Z")
_DNS_SUBDOMAIN = re.compile(_DNS_SUBDOMAIN_RE + r"\Z")
_QUALIFIED_NAME = re.compile(_QUALIFIED_NAME_RE + r"\Z")
_LABEL_VALUE = re.compile(_LABEL_VALUE_RE + r"\Z")


def _too_long(limit: int) -> str:
    return f"must be no more than {limit} characters"


def dns_label_error(value: str) -> str | None:
    """Why ``value`` is not an RFC 1123 label (a Namespace's or Service's name), or None."""
    if len(value) > 63:
        return _too_long(63)
    if not _DNS_LABEL.match(value):
        return (
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
            f"and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '{_DNS_LABEL_RE}')"
        )
    return None


def dns_subdomain_error(value: str) -> str | None:
    """Why ``value`` is not an RFC 1123 subdomain (most objects' names), or None."""
    if len(value) > 253:
        return _too_long(253)
    if not _DNS_SUBDOMAIN.match(value):
        return (
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
            "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
            f"'{_DNS_SUBDOMAIN_RE}')"
        )
    return None


def label_key_errors(key: str) -> list[str]:
    """Why ``key`` is not a label key (``[prefix/]name``); empty when it is one.

    Lengths of label keys and values count bytes (kube-apiserver 1.36 says so).
    """
    parts = key.split("/")
    if len(parts) > 2:
        return [
            f"a valid label key {_NAME_RULE} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    name = parts[-1]
    problems = []
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            problems.append("prefix part must be non-empty")
        else:
            problem = dns_subdomain_error(prefix)
            if problem:
                problems.append(f"prefix part {problem}")
    if not name:
        problems.append("name part must be non-empty")
    elif len(name.encode()) > 63:
        problems.append("name part must be no more than 63 bytes")
    if not _QUALIFIED_NAME.match(name):
        problems.append(f"name part {_NAME_RULE}")
    return problems


_NAME_RULE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    f"character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '{_QUALIFIED_NAME_RE}')"
)


def label_value_errors(value: str) -> list[str]:
    """Why ``value`` is not a label value; empty when it is one."""
    problems = []
    if len(value.encode()) > 63:
        problems.append("must be no more than 63 bytes")
    if not _LABEL_VALUE.match(value):
        problems.append(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
            "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
            f"for validation is '{_LABEL_VALUE_RE}')"
        )
    return problems


def check_body(
    registry: Registry, rt: ResourceType, body: Any, namespace: str, name: str | None
) -> dict:
    """Check a request body's kind, apiVersion, namespace and name against the URL; completes and returns it."""
    if not isinstance(body, dict):
        raise bad_request(
            f"the body of the request must be a JSON object, not {type(body).__name__}"
        )
    api_version = body.get("apiVersion")
    kind = body.get("kind")
    if not isinstance(api_version, (str, type(None))) or not isinstance(kind, (str, type(None))):
        raise bad_request("apiVersion and kind must be strings")
    if rt.is_custom:
        if api_version and api_version != rt.api_version:
            other_versions = {t.api_version for t in registry.types_for_storage_key(rt.storage_key)}
            if api_version not in other_versions:
                raise bad_request(
                    f"the API version in the data ({api_version}) does not match the expected API version ({rt.api_version})"
                )
        if kind and kind != rt.kind:
            body_meta = body.get("metadata")
            named = body_meta.get("name") if isinstance(body_meta, dict) else None
            raise invalid(
                kind,
                rt.group,
                str(named or ""),
                [("FieldValueInvalid", "kind", f'Invalid value: "{kind}": must be {rt.kind}')],
            )
    else:
        version = (api_version or rt.api_version).rsplit("/", 1)[-1]
        if kind and kind != rt.kind:
            internal = rt.group.split(".")[0] if rt.group else "core"
            raise bad_request(
                f'{kind} in version "{version}" cannot be handled as a {rt.kind}: converting ({version}.{kind}) '
                f"to ({internal}.{rt.kind}): unknown conversion"
            )
        if api_version and api_version != rt.api_version:
            raise bad_request(
                f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: no kind "{rt.kind}" is '
                f'registered for version "{api_version}" in scheme "pkg/api/legacyscheme/scheme.go:30"'
            )
    meta = body.get("metadata")
    if meta is None:
        meta = body["metadata"] = {}
    if not isinstance(meta, dict):
        raise bad_request("metadata must be a JSON object")
    if rt.namespaced:
        body_ns = meta.get("namespace")
        if body_ns and body_ns != namespace:
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        meta["namespace"] = namespace
    else:
        meta.pop("namespace", None)
    if name is not None and meta.get("name") and meta["name"] != name:
        raise bad_request(
            f"the name of the object ({meta['name']}) does not match the name on the URL ({name})"
        )
    body["apiVersion"] = rt.api_version
    body["kind"] = rt.kind
    return body


def validate_object(rt: ResourceType, obj: dict) -> None:
    """Validate ``obj``'s metadata (name, labels, annotations, finalizers, ownerReferences); 422 with causes."""
    meta = obj["metadata"]
    name = meta.get("name") or ""
    causes = []
    if not isinstance(name, str) or not name:
        causes.append(("FieldValueRequired", "metadata.name", "name or generateName is required"))
    else:
        label_like = rt.storage_key in ("/namespaces", "/services")
        problem = dns_label_error(name) if label_like else dns_subdomain_error(name)
        if problem:
            causes.append(
                ("FieldValueInvalid", "metadata.name", f'Invalid value: "{name}": {problem}')
            )
    causes.extend(_label_causes(meta.get("labels"), "metadata.labels"))
    for field in ("annotations",):
        value = meta.get(field)
        if value is not None and (
            not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values())
        ):
            causes.append(
                ("FieldValueInvalid", f"metadata.{field}", f"{field} must be a map of strings")
            )
    finalizers = meta.get("finalizers")
    if finalizers is not None and (
        not isinstance(finalizers, list) or not all(isinstance(f, str) and f for f in finalizers)
    ):
        causes.append(
            (
                "FieldValueInvalid",
                "metadata.finalizers",
                "finalizers must be a list of non-empty strings",
            )
        )
    refs = meta.get("ownerReferences")
    if refs is not None:
        if not isinstance(refs, list):
            causes.append(
                ("FieldValueInvalid", "metadata.ownerReferences", "ownerReferences must be a list")
            )
        else:
            controllers = 0
            for index, ref in enumerate(refs):
                if not isinstance(ref, dict) or not all(
                    ref.get(k) for k in ("apiVersion", "kind", "name", "uid")
                ):
                    causes.append(
                        (
                            "FieldValueRequired",
                            f"metadata.ownerReferences[{index}]",
                            "apiVersion, kind, name and uid are required",
                        )
                    )
                elif ref.get("controller"):
                    controllers += 1
            if controllers > 1:
                causes.append(
                    (
                        "FieldValueInvalid",
                        "metadata.ownerReferences",
                        "Only one reference can have Controller set to true",
                    )
                )
    causes.extend(_pod_template_causes(rt, obj))
    causes.extend(_size_causes(rt, obj))
    causes.extend(_lease_causes(rt, obj))
    if causes:
        raise invalid(rt.kind, rt.group, name if isinstance(name, str) else "", causes)


def _label_causes(labels: Any, path: str) -> list[tuple[str, str, str]]:
    """The causes of a ``labels`` map at ``path`` (keys and values), as the real server words them."""
    if labels is None:
        return []
    if not isinstance(labels, dict):
        return [("FieldValueInvalid", path, "labels must be a map of strings")]
    causes = []
    for key in sorted(labels, key=str):
        value = labels[key]
        for problem in label_key_errors(str(key)):
            causes.append(("FieldValueInvalid", path, f'Invalid value: "{key}": {problem}'))
        if not isinstance(value, str):
            causes.append(
                ("FieldValueInvalid", path, f'Invalid value: "{key}": label values must be strings')
            )
            continue
        for problem in label_value_errors(value):
            causes.append(("FieldValueInvalid", path, f'Invalid value: "{value}": {problem}'))
    return causes


def embedded_metadata_causes(meta: dict, path: str) -> list[tuple[str, str, str]]:
    """The ObjectMeta of an embedded resource (``x-kubernetes-embedded-resource``) at ``path``.

    As the real server: a name is a path segment (no ``/`` or ``%``, not
    ``.`` or ``..``), a namespace a DNS label, labels as on any object.
    """
    causes: list[tuple[str, str, str]] = []
    for key in ("name", "generateName"):
        value = meta.get(key)
        if not isinstance(value, str) or not value:
            continue
        if key == "name" and value in (".", ".."):
            causes.append(
                (
                    "FieldValueInvalid",
                    f"{path}.{key}",
                    f"Invalid value: \"{value}\": may not be '{value}'",
                )
            )
        for bad in ("/", "%"):
            if bad in value:
                causes.append(
                    (
                        "FieldValueInvalid",
                        f"{path}.{key}",
                        f"Invalid value: \"{value}\": may not contain '{bad}'",
                    )
                )
    namespace = meta.get("namespace")
    if isinstance(namespace, str) and namespace:
        problem = dns_label_error(namespace)
        if problem:
            causes.append(
                (
                    "FieldValueInvalid",
                    f"{path}.namespace",
                    f'Invalid value: "{namespace}": {problem}',
                )
            )
    causes.extend(_label_causes(meta.get("labels"), f"{path}.labels"))
    return causes


_POD_SPEC_PATHS = {
    "/pods": ("spec",),
    "apps/deployments": ("spec", "template", "spec"),
    "apps/replicasets": ("spec", "template", "spec"),
    "apps/statefulsets": ("spec", "template", "spec"),
    "apps/daemonsets": ("spec", "template", "spec"),
    "batch/jobs": ("spec", "template", "spec"),
}


def _pod_template_causes(rt: ResourceType, obj: dict) -> list[tuple[str, str, str]]:
    """The containers of a pod (template) need a name and an image."""
    path = _POD_SPEC_PATHS.get(rt.storage_key)
    if path is None:
        return []
    spec: Any = obj
    for part in path:
        spec = spec.get(part) if isinstance(spec, dict) else None
    if not isinstance(spec, dict):
        return []
    prefix = ".".join(path)
    causes = []
    for field in ("containers", "initContainers"):
        containers = spec.get(field)
        if not isinstance(containers, list):
            continue
        for i, container in enumerate(containers):
            if not isinstance(container, dict):
                continue
            for key in ("name", "image"):
                if not container.get(key):
                    causes.append(
                        ("FieldValueRequired", f"{prefix}.{field}[{i}].{key}", "Required value")
                    )
    return causes


#: the real server's limit on the data of one ConfigMap or Secret
MAX_DATA_SIZE = 1024 * 1024


def _size_causes(rt: ResourceType, obj: dict) -> list[tuple[str, str, str]]:
    """ConfigMaps and Secrets hold at most 1 MiB of data (keys included)."""
    if rt.storage_key not in ("/configmaps", "/secrets"):
        return []
    total = 0
    for field in ("data", "binaryData"):
        values = obj.get(field)
        if isinstance(values, dict):
            total += sum(
                len(str(k)) + len(v) if isinstance(v, str) else len(str(k))
                for k, v in values.items()
            )
    if total <= MAX_DATA_SIZE:
        return []
    where = "[]" if rt.storage_key == "/configmaps" else "data"
    return [("FieldValueTooLong", where, f"may not be more than {MAX_DATA_SIZE} bytes")]


# -- MicroTime fields (a Lease's acquireTime and renewTime) --------------------------------------

_MICROTIME_LAYOUT = "2006-01-02T15:04:05.000000Z07:00"
_MICROTIME_FIELDS = {"coordination.k8s.io/leases": ("acquireTime", "renewTime")}
_DATE = re.compile(r"\d{4}-\d\d-\d\d")
_CLOCK = re.compile(r"\d\d:\d\d:\d\d")
_ZONE = re.compile(r"([+-])(\d\d):(\d\d)\Z")


def parse_microtime(value: str) -> str:
    """A MicroTime as the real server reads it: exactly six fractional digits; returned in UTC.

    Raises ``ValueError`` with Go's parse error (``cannot parse "Z" as ".000000"``).
    """
    import datetime

    def fail(rest: str, expected: str) -> ValueError:
        return ValueError(
            f'parsing time "{value}" as "{_MICROTIME_LAYOUT}": cannot parse "{rest}" as "{expected}"'
        )

    if not _DATE.match(value):
        raise fail(value, "2006")
    rest = value[10:]
    if not rest.startswith("T"):
        raise fail(rest, "T")
    rest = rest[1:]
    if not _CLOCK.match(rest):
        raise fail(rest, "15")
    rest = rest[8:]
    if not (len(rest) >= 7 and rest[0] == "." and rest[1:7].isdigit()):
        raise fail(rest, ".000000")
    fraction, zone = rest[1:7], rest[7:]
    if zone == "Z":
        offset = datetime.timedelta(0)
    else:
        m = _ZONE.match(zone)
        if m is None:
            raise fail(zone, "Z07:00")
        offset = datetime.timedelta(hours=int(m.group(2)), minutes=int(m.group(3))) * (
            1 if m.group(1) == "+" else -1
        )
    try:
        moment = datetime.datetime.strptime(value[:19], "%Y-%m-%dT%H:%M:%S") - offset
    except ValueError:
        raise fail(value, "2006") from None
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{fraction}Z"


def normalize_times(rt: ResourceType, obj: dict) -> None:
    """Parse a Lease's MicroTime fields as the real decoder does (400 on a malformed one), normalised to UTC."""
    fields = _MICROTIME_FIELDS.get(rt.storage_key)
    spec = obj.get("spec")
    if not fields or not isinstance(spec, dict):
        return
    for field in fields:
        value = spec.get(field)
        if value is None:
            continue
        try:
            spec[field] = parse_microtime(str(value))
        except ValueError as exc:
            raise bad_request(
                f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: {exc}'
            ) from None


def _lease_causes(rt: ResourceType, obj: dict) -> list[tuple[str, str, str]]:
    if rt.storage_key != "coordination.k8s.io/leases":
        return []
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return []
    causes = []
    duration = spec.get("leaseDurationSeconds")
    if isinstance(duration, int) and duration <= 0:
        causes.append(
            (
                "FieldValueInvalid",
                "spec.leaseDurationSeconds",
                f"Invalid value: {duration}: must be greater than 0",
            )
        )
    transitions = spec.get("leaseTransitions")
    if isinstance(transitions, int) and transitions < 0:
        causes.append(
            (
                "FieldValueInvalid",
                "spec.leaseTransitions",
                f"Invalid value: {transitions}: must be greater than or equal to 0",
            )
        )
    return causes
