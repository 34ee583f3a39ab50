"""Finalizers on plain-dict objects: ``metadata.finalizers`` as a set of qualified names.

controller-runtime's ``controllerutil.AddFinalizer`` / ``RemoveFinalizer`` /
``ContainsFinalizer``, as :func:`add_finalizer`, :func:`remove_finalizer`
and :func:`contains_finalizer`. Adding and removing are idempotent and say
whether they changed the object, so a caller writes only when they did.

A finalizer a controller adds must be a *domain-qualified* name,
``example.com/cleanup``: a DNS subdomain prefix, ``/``, and a name of at
most 63 characters (letters, digits, ``-``, ``_``, ``.``, alphanumeric at
both ends). The API server only warns about an unqualified one, but an
unqualified name is how two controllers end up removing each other's
finalizer, so :func:`add_finalizer` refuses it with a ValueError naming the
argument. Reading and removing accept any string (an object may carry
finalizers written by others).

Mutating functions change the object they are given: deep-copy a cached
object first. Not thread-safe on a shared object.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, MutableMapping
from typing import Any

__all__ = ["add_finalizer", "contains_finalizer", "remove_finalizer", "validate_finalizer_name"]

_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def validate_finalizer_name(finalizer: Any) -> None:
    """Raise ValueError unless ``finalizer`` is a domain-qualified name such as ``example.com/cleanup``."""
    if not isinstance(finalizer, str) or not finalizer:
        raise ValueError(
            f"finalizer must be a non-empty string such as 'example.com/cleanup', got {finalizer!r}"
        )
    prefix, slash, name = finalizer.rpartition("/")
    if not slash:
        raise ValueError(
            f"finalizer {finalizer!r} is not domain-qualified: use a name like 'example.com/{finalizer}' "
            "(your controller's domain, so no other controller removes it)"
        )
    if not prefix or len(prefix) > 253 or "/" in prefix or not _SUBDOMAIN.match(prefix):
        raise ValueError(
            f"finalizer {finalizer!r}: the prefix {prefix!r} must be a DNS subdomain (lower case, e.g. example.com)"
        )
    if not name or len(name) > 63 or not _NAME.match(name):
        raise ValueError(
            f"finalizer {finalizer!r}: the name {name!r} must be at most 63 characters of letters, digits, "
            "'-', '_' or '.', starting and ending with a letter or digit"
        )


def _finalizers(obj: Mapping[str, Any]) -> list:
    md = obj.get("metadata")
    if not isinstance(md, Mapping):
        return []
    found = md.get("finalizers")
    return found if isinstance(found, list) else []


def contains_finalizer(obj: Mapping[str, Any], finalizer: str) -> bool:
    """True when ``obj``'s ``metadata.finalizers`` holds ``finalizer``."""
    return finalizer in _finalizers(obj)


def add_finalizer(obj: MutableMapping[str, Any], finalizer: str) -> bool:
    """Append ``finalizer`` to ``obj`` unless it is there; True when ``obj`` changed.

    Raises ValueError for a name that is not domain-qualified (see
    :func:`validate_finalizer_name`), before changing anything.
    """
    validate_finalizer_name(finalizer)
    if contains_finalizer(obj, finalizer):
        return False
    md = obj.get("metadata")
    if md is None:
        md = obj["metadata"] = {}
    md["finalizers"] = [*_finalizers(obj), finalizer]
    return True


def remove_finalizer(obj: MutableMapping[str, Any], finalizer: str) -> bool:
    """Remove every occurrence of ``finalizer`` from ``obj``; True when ``obj`` changed."""
    current = _finalizers(obj)
    if finalizer not in current:
        return False
    kept = [f for f in current if f != finalizer]
    obj["metadata"]["finalizers"] = kept
    return True
