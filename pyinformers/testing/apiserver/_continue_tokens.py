"""Continue tokens of paged lists: made like kube-apiserver's, refused in its words.

A token is unpadded URL-safe base64 of ``{"v": "meta.k8s.io/v1", "rv": N,
"start": KEY}``: the list's resourceVersion and the key after which the next
page starts. Clients treat it as opaque. :func:`decode_continue` reads one
back and, for a token the server did not make, raises the 400 a real server
answers, with its message: the base64 error (``illegal base64 data at input
byte N``), the JSON error (what Go's decoder says for a first byte that
starts no value, for a value of the wrong type, for a field of the wrong
type), or the token rule it breaks (version, resourceVersion, start key).
JSON that breaks off further in is described less precisely than Go would.

Pure functions; thread-safe.
"""

from __future__ import annotations

import base64
import json
import posixpath
import string
from typing import Any

import orjson

from pyinformers.testing.apiserver._status import StatusError, bad_request

__all__ = ["encode_continue", "decode_continue"]

VERSION = "meta.k8s.io/v1"
_ALPHABET = frozenset(string.ascii_letters + string.digits + "-_")
_GO_TYPE = "storage.continueToken"
_FIELDS = {"v": "string", "rv": "int64", "start": "string"}


def encode_continue(rv: int, start: str) -> str:
    token = orjson.dumps({"v": VERSION, "rv": rv, "start": start})
    return base64.urlsafe_b64encode(token).decode().rstrip("=")


def _refused(problem: str) -> StatusError:
    return bad_request(f"invalid continue token: continue key is not valid{problem}")


def _unbase64(token: str) -> bytes:
    for i, ch in enumerate(token):
        if ch not in _ALPHABET:
            raise _refused(f": illegal base64 data at input byte {i}")
    if len(token) % 4 == 1:
        raise _refused(f": illegal base64 data at input byte {len(token) - 1}")
    return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))


def _quote_byte(byte: int) -> str:
    """A byte as Go's JSON errors quote it (as the rune of that number)."""
    ch = chr(byte)
    if ch == "'":
        return "'\\''"
    if ch == '"':
        return "'\"'"
    inner = json.dumps(ch)[1:-1] if not ch.isprintable() else ch
    return f"'{inner}'"


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _syntax_error(data: bytes) -> str:
    stripped = data.lstrip(b" \t\r\n")
    if not stripped:
        return "unexpected end of JSON input"
    if stripped[:1] not in b'{["-0123456789tfn':
        return f"invalid character {_quote_byte(stripped[0])} looking for beginning of value"
    return "unexpected end of JSON input"


def _field_error(name: str, raw: Any) -> str | None:
    """Why a field of the token cannot be read into its Go type, or None (null leaves a field unset)."""
    expected = _FIELDS[name]
    if raw is None:
        return None
    if expected == "string" and isinstance(raw, str):
        return None
    if (
        expected == "int64"
        and isinstance(raw, int)
        and not isinstance(raw, bool)
        and -(2**63) <= raw < 2**63
    ):
        return None
    what = _kind(raw)
    if what == "number":
        what = f"number {raw}"
    return f"json: cannot unmarshal {what} into Go struct field continueToken.{name} of type {expected}"


def decode_continue(token: str) -> tuple[int, str]:
    """(resourceVersion, start key) of a token; 400 as the real server words it for one it would refuse."""
    data = _unbase64(token)
    try:
        value = json.loads(data.decode("utf-8", errors="replace"))
    except ValueError:
        raise _refused(f": {_syntax_error(data)}") from None
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise _refused(f": json: cannot unmarshal {_kind(value)} into Go value of type {_GO_TYPE}")
    for name, raw in value.items():
        problem = _field_error(name, raw) if name in _FIELDS else None
        if problem:
            raise _refused(f": {problem}")
    version = value.get("v") or ""
    rv = value.get("rv") or 0
    start = value.get("start") or ""
    if version != VERSION:
        raise _refused(f": server does not recognize this encoded version {version}")
    if rv == 0:
        raise _refused(f": incorrect encoded start resourceVersion (version {VERSION})")
    if not start:
        raise _refused(f": encoded start key empty (version {VERSION})")
    key = start if start.startswith("/") else "/" + start
    cleaned = posixpath.normpath(key)
    if cleaned.startswith("//"):
        cleaned = "/" + cleaned.lstrip("/")
    if cleaned != key:
        raise _refused(f": {start}")
    return rv, start
