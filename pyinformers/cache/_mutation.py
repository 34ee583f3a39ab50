"""The cache mutation detector: who changed a cached object in place, and where.

Objects in an informer's cache are shared by every reader (listers, event
handlers, reconciles) and must never be changed in place (see
:mod:`pyinformers.cache`'s store). In Python nothing stops
``obj["metadata"]["labels"]["x"] = "y"`` on a cached dict, and the damage is
silent: other readers see a state the API server never had, indexes file the
object under stale values. The detector turns that into a report naming the
informer, the object's key, the first path that changed and the code that
changed it::

    cache mutation: v1/configmaps default/web changed in place at
    data.color by handler 2 of v1/configmaps (on_update); deep-copy
    before changing (pyinformers.api.meta.deep_copy)

How it works. When the detector is on, every object the informer caches is
*fingerprinted*: serialised once with ``orjson`` (compact JSON bytes, about a
fifth of the object's memory). Fingerprints are compared (one ``memcmp``)

* after each call of an event handler, for the objects it was given and the
  objects it read through a lister (:meth:`MutationDetector.wrap_handler`);
* after each reconcile, for the objects it read through a lister (the
  controller runs it in a :func:`mutation_scope`);
* when an object leaves the cache (replaced by a newer version, or
  deleted), and in :meth:`MutationDetector.check_all` (called when the
  informer stops), for what no scope saw: those are reported as found "when
  replaced" or "by a sweep", without a culprit.

A changed object is reported once (its fingerprint is taken again), logged
at ERROR, and kept in the process-wide list that :func:`mutations` returns;
the pytest plugin fails the test that caused it.

When it is on. Off by default: then no fingerprint is taken and the
informer's hot path is unchanged (the informer chooses its apply function
at construction). On when the informer is built with
``mutation_detector=True``, or when the environment variable
``PYINFORMERS_CACHE_MUTATION_DETECTOR`` is ``1`` (client-go's
``KUBE_CACHE_MUTATION_DETECTOR``), or after :func:`set_default` (the pytest
plugin turns it on for every test; ``make test`` sets the variable too).

Thread-safety: :meth:`~MutationDetector.record` and
:meth:`~MutationDetector.forget` are called by the thread applying changes
to the cache; checks may run on any thread. The fingerprint table is a dict
whose single operations are atomic under the GIL; the list of mutations has
its own lock. Scopes are per thread.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import orjson

__all__ = [
    "ENV_VAR",
    "Mutation",
    "MutationDetector",
    "clear_mutations",
    "detector_enabled",
    "first_difference",
    "mutation_scope",
    "mutations",
    "set_default",
]

log = logging.getLogger("pyinformers.cache.mutation")

#: The environment variable that turns the detector on for every informer (``1``, ``true``).
ENV_VAR = "PYINFORMERS_CACHE_MUTATION_DETECTOR"

_default: bool | None = None  # set_default(); None: the environment decides
_mutations_lock = threading.Lock()
_mutations: list[Mutation] = []
_local = threading.local()

_ADVICE = "deep-copy before changing (pyinformers.api.meta.deep_copy)"


def set_default(enabled: bool | None) -> None:
    """Turn the detector on (True) or off (False) for informers built from now on; None: the environment decides."""
    global _default
    _default = None if enabled is None else bool(enabled)


def detector_enabled(option: bool | None = None) -> bool:
    """Whether an informer built now with ``mutation_detector=option`` detects mutations.

    An explicit option wins; then :func:`set_default`; then :data:`ENV_VAR`.
    """
    if option is not None:
        return bool(option)
    if _default is not None:
        return _default
    return os.environ.get(ENV_VAR, "").strip().lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True)
class Mutation:
    """One in-place change of a cached object: which informer, which key, where, and who."""

    informer: str
    key: str
    path: str
    culprit: str

    def __str__(self) -> str:
        return f"cache mutation: {self.informer} {self.key} changed in place at {self.path} by {self.culprit}; {_ADVICE}"


def mutations() -> list[Mutation]:
    """Every mutation reported in this process so far (oldest first), until :func:`clear_mutations`."""
    with _mutations_lock:
        return list(_mutations)


def clear_mutations() -> list[Mutation]:
    """Forget the reported mutations; returns them."""
    with _mutations_lock:
        found = list(_mutations)
        _mutations.clear()
        return found


def _fingerprint(obj: Any) -> bytes | None:
    try:
        return orjson.dumps(obj)
    except TypeError:  # not JSON (a transform put a Python object in): not fingerprinted
        return None


def first_difference(before: Any, after: Any, path: str = "") -> str | None:
    """The first path (``metadata.labels.app``, ``spec.containers[0].image``) where two JSON values differ.

    None when they are equal. A key present on one side only is named too.
    """
    if type(before) is not type(after):
        return path or "<the object>"
    if isinstance(before, dict):
        for key in before:
            if key not in after:
                return _join(path, key)
        for key in after:
            if key not in before:
                return _join(path, key)
        for key in before:
            found = first_difference(before[key], after[key], _join(path, key))
            if found is not None:
                return found
        return None
    if isinstance(before, list):
        for i, (a, b) in enumerate(zip(before, after)):
            found = first_difference(a, b, f"{path}[{i}]")
            if found is not None:
                return found
        if len(before) != len(after):
            return f"{path}[{min(len(before), len(after))}]"
        return None
    return None if before == after else (path or "<the object>")


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else str(key)


class _Scope:
    """What one handler call or reconcile read from watched caches (a thread's current scope)."""

    __slots__ = ("culprit", "reads")

    def __init__(self, culprit: str) -> None:
        self.culprit = culprit
        self.reads: list[tuple[MutationDetector, str, Any]] = []


@contextmanager
def mutation_scope(culprit: str) -> Iterator[None]:
    """Attribute mutations of what the calling thread reads through listers meanwhile to ``culprit``.

    On exit, every cached object read in the scope (through a lister of an
    informer whose detector is on) is checked. Scopes nest; the innermost
    one collects. Costs nothing measurable when no detector is on: nothing
    is read into it.
    """
    scope = _Scope(culprit)
    outer = getattr(_local, "scope", None)
    _local.scope = scope
    try:
        yield
    finally:
        _local.scope = outer
        for detector, key, obj in scope.reads:
            detector.check(key, obj, culprit)


def _current_scope() -> _Scope | None:
    return getattr(_local, "scope", None)


class MutationDetector:
    """The fingerprints of one informer's cached objects, and the checks against them (module docstring).

    :param informer: the informer's name, for reports.
    :param on_mutation: called with each :class:`Mutation` found (after it is logged and recorded).
    """

    def __init__(
        self, informer: str, *, on_mutation: Callable[[Mutation], Any] | None = None
    ) -> None:
        self._informer = informer
        self._on_mutation = on_mutation
        # key -> (the cached object, its fingerprint). Invariant: holds an entry for every key
        # the informer's cache holds (unless the object could not be fingerprinted), with the
        # very object cached; written only by the thread applying changes.
        self._prints: dict[str, tuple[Any, bytes]] = {}

    @property
    def informer(self) -> str:
        return self._informer

    def __len__(self) -> int:
        return len(self._prints)

    # -- the writer's side ---------------------------------------------------------------
    def record(self, key: str, obj: Any, old: Any = None) -> None:
        """``obj`` is now cached under ``key`` (replacing ``old``, which is checked first)."""
        if old is not None:
            self.check(key, old, "an unknown writer (found when the object was replaced)")
        fingerprint = _fingerprint(obj)
        if fingerprint is None:
            self._prints.pop(key, None)
        else:
            self._prints[key] = (obj, fingerprint)

    def forget(self, key: str, obj: Any = None) -> None:
        """``key`` left the cache (``obj``, its last cached version, is checked first)."""
        if obj is not None:
            self.check(key, obj, "an unknown writer (found when the object was deleted)")
        self._prints.pop(key, None)

    def clear(self) -> None:
        self._prints.clear()

    # -- checks ----------------------------------------------------------------------------
    def check(self, key: str, obj: Any, culprit: str) -> Mutation | None:
        """Report ``obj`` (cached under ``key``) if it changed since it was fingerprinted; any thread.

        An object that is no longer the cached version of ``key`` is not
        checked here (it was checked when it left the cache).
        """
        entry = self._prints.get(key)
        if entry is None or entry[0] is not obj:
            return None
        now = _fingerprint(obj)
        if now == entry[1]:
            return None
        path = (
            "<the object>"
            if now is None
            else first_difference(orjson.loads(entry[1]), obj) or "<the object>"
        )
        if now is not None and self._prints.get(key) is entry:
            self._prints[key] = (obj, now)  # report one change once
        mutation = Mutation(self._informer, key, path, culprit)
        self._report(mutation)
        return mutation

    def check_all(self, culprit: str = "an unknown writer (found by a sweep)") -> list[Mutation]:
        """Check every cached object; the mutations found."""
        found = []
        for key, (obj, _print) in list(self._prints.items()):
            mutation = self.check(key, obj, culprit)
            if mutation is not None:
                found.append(mutation)
        return found

    def note_read(self, key: str, obj: Any) -> None:
        """A lister handed ``obj`` to the calling thread: check it when the thread's scope ends."""
        scope = _current_scope()
        if scope is not None:
            scope.reads.append((self, key, obj))

    def note_reads(self, key_of: Callable[[Any], str], objs: list) -> None:
        scope = _current_scope()
        if scope is not None:
            reads = scope.reads
            for obj in objs:
                try:
                    reads.append((self, key_of(obj), obj))
                except Exception:  # an object without a key is not in the cache under one
                    continue

    def wrap_handler(
        self, fn: Callable[..., Any] | None, culprit: str, key_of: Callable[[Any], str]
    ) -> Callable[..., Any] | None:
        """``fn`` (an ``on_add``/``on_update``/``on_delete``) checking what it was given and read, after each call."""
        if fn is None:
            return None
        check = self.check

        def checked(*args: Any) -> Any:
            with mutation_scope(culprit):
                try:
                    return fn(*args)
                finally:
                    for arg in args:
                        if isinstance(arg, dict):
                            try:
                                key = key_of(arg)
                            except Exception:
                                continue
                            check(key, arg, culprit)

        checked.__name__ = getattr(fn, "__name__", "handler")
        checked.__wrapped__ = fn  # type: ignore[attr-defined]
        return checked

    def _report(self, mutation: Mutation) -> None:
        with _mutations_lock:
            _mutations.append(mutation)
        log.error("%s", mutation)
        if self._on_mutation is not None:
            try:
                self._on_mutation(mutation)
            except Exception:
                log.exception("the on_mutation callback of %s failed", self._informer)

    def __repr__(self) -> str:
        return f"<MutationDetector {self._informer!r} objects={len(self._prints)}>"
