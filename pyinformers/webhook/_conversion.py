"""Conversion between the versions of a custom resource: hub and spoke, and the ConversionReview.

One version is the *hub*; every other version (a *spoke*) says how to
convert to the hub and back. Any version then converts to any other through
the hub, so n versions need 2(n-1) functions, not n(n-1).

A conversion function gets a deep copy of the object and returns the
converted object (or edits the copy and returns None). The library, not the
function, keeps the rules the API server checks: the result has the desired
``apiVersion`` and the original ``kind``, and its ``metadata`` is the
original's, except that ``labels`` and ``annotations`` may change (as the
apiextensions server restores it).

:func:`review_conversion` answers a ``ConversionReview`` v1; a function that
raises fails the whole review (``result.status: Failure``; the API server
then fails the read or write), logged with the review's uid, never the data.

Thread-safety: a :class:`Conversion` is filled at import time and read-only
afterwards; functions may run concurrently.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyinformers.api.meta import deep_copy
from pyinformers.webhook._admission import ReviewError, _frames

__all__ = ["CONVERSION_V1", "Conversion", "ConversionError", "review_conversion"]

_log = logging.getLogger("pyinformers.webhook")

#: The ConversionReview version served.
CONVERSION_V1 = "apiextensions.k8s.io/v1"

Convert = Callable[[dict[str, Any]], Mapping[str, Any] | None]


class ConversionError(ValueError):
    """An object this conversion cannot convert (another kind, an unknown version)."""


@dataclass
class Conversion:
    """The versions of ``kind`` in ``group`` (its CRD ``plural.group``), converted through ``hub``.

    Register the spokes with :meth:`spoke`, or the decorators
    :meth:`to_hub` and :meth:`from_hub`.
    """

    group: str
    kind: str
    hub: str
    plural: str = ""
    _up: dict[str, Convert] = field(default_factory=dict, repr=False)
    _down: dict[str, Convert] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not self.group or "/" in self.group or not self.kind or not self.hub:
            raise ValueError("a Conversion needs a group, a kind and a hub version")
        if not self.plural:
            self.plural = self.kind.lower() + "s"

    @property
    def crd_name(self) -> str:
        return f"{self.plural}.{self.group}"

    @property
    def versions(self) -> tuple[str, ...]:
        """The hub, then the spokes in registration order."""
        return (self.hub, *(v for v in self._up if v != self.hub))

    def spoke(self, version: str, *, to_hub: Convert, from_hub: Convert) -> None:
        """Register ``version`` with its two functions."""
        if version == self.hub:
            raise ValueError(f"{version!r} is the hub of {self.crd_name}: it converts to nothing")
        self._up[version], self._down[version] = to_hub, from_hub

    def to_hub(self, version: str) -> Callable[[Convert], Convert]:
        """Decorator: ``fn`` converts a ``version`` object to the hub."""

        def register(fn: Convert) -> Convert:
            if version == self.hub:
                raise ValueError(f"{version!r} is the hub of {self.crd_name}")
            self._up[version] = fn
            return fn

        return register

    def from_hub(self, version: str) -> Callable[[Convert], Convert]:
        """Decorator: ``fn`` converts a hub object to ``version``."""

        def register(fn: Convert) -> Convert:
            if version == self.hub:
                raise ValueError(f"{version!r} is the hub of {self.crd_name}")
            self._down[version] = fn
            return fn

        return register

    def check(self) -> None:
        """Raise ValueError when a spoke has only one of its two functions."""
        for version in set(self._up) ^ set(self._down):
            has = "to_hub" if version in self._up else "from_hub"
            raise ValueError(
                f"spoke {version!r} of {self.crd_name} has {has} but not the other direction"
            )

    def _step(
        self, functions: dict[str, Convert], version: str, obj: dict[str, Any], to: str
    ) -> dict[str, Any]:
        fn = functions.get(version)
        if fn is None:
            raise ConversionError(
                f"{self.crd_name} has no version {version!r} (has {', '.join(self.versions)})"
            )
        result = fn(obj)
        out = dict(result) if result is not None else obj
        out["apiVersion"] = f"{self.group}/{to}"
        return out

    def convert(self, obj: Mapping[str, Any], version: str) -> dict[str, Any]:
        """``obj`` (any served version) as ``version``; ``obj`` itself is not modified.

        Raises :class:`ConversionError` for another kind or group, or a
        version this conversion does not know; whatever a function raises
        passes through.
        """
        api_version = obj.get("apiVersion")
        group, _, current = str(api_version or "").rpartition("/")
        if group != self.group or obj.get("kind") != self.kind:
            raise ConversionError(
                f"cannot convert {obj.get('kind')!r} of {api_version!r}: this is {self.kind} "
                f"of {self.group}"
            )
        for known in (current, version):
            if known != self.hub and known not in self._up:
                raise ConversionError(
                    f"{self.crd_name} has no version {known!r} (has {', '.join(self.versions)})"
                )
        out = deep_copy(obj)
        if current != version:
            if current != self.hub:
                out = self._step(self._up, current, out, self.hub)
            if version != self.hub:
                out = self._step(self._down, version, out, version)
        out["apiVersion"] = f"{self.group}/{version}"
        out["kind"] = self.kind
        _restore_metadata(obj, out)
        return out


def _restore_metadata(original: Mapping[str, Any], converted: dict[str, Any]) -> None:
    """The original's metadata, with the converted object's labels and annotations (the API server's rule)."""
    metadata = original.get("metadata")
    if not isinstance(metadata, Mapping):
        return
    restored = deep_copy(dict(metadata))
    changed = converted.get("metadata")
    for key in ("labels", "annotations"):
        value = changed.get(key) if isinstance(changed, Mapping) else None
        if value:
            restored[key] = value
        else:
            restored.pop(key, None)
    converted["metadata"] = restored


def _failure(uid: str, message: str) -> dict[str, Any]:
    return {
        "apiVersion": CONVERSION_V1,
        "kind": "ConversionReview",
        "response": {
            "uid": uid,
            "convertedObjects": [],
            "result": {"status": "Failure", "message": message},
        },
    }


def review_conversion(conversions: Sequence[Conversion], review_doc: Any) -> dict[str, Any]:
    """The ``ConversionReview`` answering ``review_doc`` with the matching conversion.

    Raises :class:`ReviewError` for a body that is not a v1 ConversionReview.
    """
    if not isinstance(review_doc, Mapping):
        raise ReviewError("the body is not a JSON object")
    if review_doc.get("kind") != "ConversionReview":
        raise ReviewError(f"expected kind ConversionReview, got {review_doc.get('kind')!r}")
    if review_doc.get("apiVersion") != CONVERSION_V1:
        raise ReviewError(
            f"ConversionReview version {review_doc.get('apiVersion')!r} is not served "
            f"(only {CONVERSION_V1})"
        )
    request = review_doc.get("request")
    if (
        not isinstance(request, Mapping)
        or not isinstance(request.get("uid"), str)
        or not request["uid"]
    ):
        raise ReviewError("the ConversionReview has no request with a uid")
    uid, desired, objects = request["uid"], request.get("desiredAPIVersion"), request.get("objects")
    if not isinstance(desired, str) or "/" not in desired or not isinstance(objects, list):
        raise ReviewError(
            "the ConversionReview request needs desiredAPIVersion (group/version) and objects"
        )
    group, _, version = desired.rpartition("/")
    by_kind: dict[tuple[str, Any], Conversion] = {(c.group, c.kind): c for c in conversions}
    converted = []
    for index, obj in enumerate(objects):
        if not isinstance(obj, Mapping):
            return _failure(uid, f"objects[{index}] is not an object")
        conversion = by_kind.get((group, obj.get("kind")))
        if conversion is None:
            return _failure(uid, f"no conversion for {obj.get('kind')!r} of group {group!r}")
        try:
            converted.append(conversion.convert(obj, version))
        except ConversionError as err:
            return _failure(uid, str(err))
        except Exception as err:
            _log.error(
                "conversion of %s to %s failed on request %s (objects[%d]): %s",
                conversion.crd_name,
                desired,
                uid,
                index,
                _frames(err),
            )
            return _failure(uid, f"converting objects[{index}] to {desired} failed (request {uid})")
    return {
        "apiVersion": CONVERSION_V1,
        "kind": "ConversionReview",
        "response": {"uid": uid, "convertedObjects": converted, "result": {"status": "Success"}},
    }
