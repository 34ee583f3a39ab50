"""Decoding request bodies as the real server does, with its error messages.

:func:`decode_body` accepts JSON (and YAML, which ``kubectl`` may send) and
answers 415 for other media types and 400 for bodies that do not parse, with
the wording of kube-apiserver's decoder (``the object provided is
unrecognized (must be of type ConfigMap): couldn't get version/kind; json
parse error: ...``).

Pure functions; thread-safe.
"""

from __future__ import annotations

from typing import Any

import orjson

from pyinformers.testing.apiserver._status import StatusError, bad_request

__all__ = ["decode_body", "JSON_MEDIA_TYPES"]

JSON_MEDIA_TYPES = ("application/json", "application/yaml", "application/vnd.kubernetes.protobuf")
_GO_TYPE_META = 'struct { APIVersion string "json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }'


def _unsupported() -> StatusError:
    return StatusError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        + ", ".join(JSON_MEDIA_TYPES),
    )


def decode_body(body: bytes, content_type: str, kind: str) -> Any:
    """The JSON document of a create/update body meant to be a ``kind``."""
    media = (content_type or "application/json").split(";")[0].strip().lower()
    if media not in ("application/json", "application/yaml"):
        raise _unsupported()
    prefix = f"the object provided is unrecognized (must be of type {kind}): couldn't get version/kind; json parse error: "
    if media == "application/yaml":
        import yaml

        try:
            return yaml.safe_load(body)
        except yaml.YAMLError as exc:
            raise bad_request(f"{prefix}{exc}") from None
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        text = body.decode("utf-8", "replace")
        snippet = text if len(text) <= 30 else text[:30] + " ..."
        reason = (
            "unexpected end of JSON input"
            if exc.pos >= len(body.rstrip())
            else f"invalid character at offset {exc.pos}"
        )
        raise bad_request(f"{prefix}{reason} ({snippet})") from None
    if not isinstance(document, dict):
        kind_of = "array" if isinstance(document, list) else type(document).__name__
        raise bad_request(
            f"{prefix}json: cannot unmarshal {kind_of} into Go value of type {_GO_TYPE_META} ({body.hex()})"
        )
    return document
