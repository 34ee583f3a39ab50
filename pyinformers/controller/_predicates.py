"""Predicates: plain functions ``Change -> bool`` that filter events before they become keys.

A handler evaluates its predicates on every :class:`~pyinformers.controller.Change`
and enqueues keys only when all of them return True. Any callable taking an
``Change`` is a predicate; the ones here cover the common cases, and
:func:`all_of`, :func:`any_of` and :func:`not_` compose them.

Adds and deletes always pass the ``*_changed`` predicates: there is nothing to
compare them with. Only updates are compared.

**Resyncs.** A periodic resync re-delivers each cached object as an update
whose old and new objects are the same. The ``*_changed`` predicates here let
resyncs through (``generation_changed`` included), because the point of a
resync is to give every key a periodic reconcile, and a predicate that
filters status noise should not silently turn that off. To drop resyncs,
add :func:`resource_version_changed` (a resync never changes the
resourceVersion) or ``not_(is_resync)``.

**Objects without a generation.** Kinds without a spec/status split (a
ConfigMap, a Secret) have no ``metadata.generation``. ``generation_changed``
lets their updates through rather than dropping all of them (controller-runtime
drops them, which surprises people): it filters only when both sides carry a
generation.

**An update missing its old or new object.** An informer never delivers
one, but a hand-built :class:`~pyinformers.controller.Change` can:
every ``*_changed`` predicate here returns False for it (the change is
dropped), as controller-runtime's predicates do, rather than guessing what
changed. The predicates of one object (:func:`object_predicate`,
:func:`label_selector`, controller-runtime's ``NewPredicateFuncs`` kind)
judge an update by its new object alone, so only a missing new object
drops it.

All predicates are pure and thread-safe; they must never mutate the objects.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pyinformers.cache import ChangeKind
from pyinformers.controller._change import Change

__all__ = [
    "Predicate",
    "all_of",
    "annotations_changed",
    "any_of",
    "generation_changed",
    "is_resync",
    "label_selector",
    "labels_changed",
    "not_",
    "object_predicate",
    "resource_version_changed",
]

#: A predicate: True lets the change through.
Predicate = Callable[[Change], bool]


def _meta(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    if not obj:
        return {}
    return obj.get("metadata") or {}


def _incomplete_update(change: Change) -> bool:
    """An update without its old or its new object (see the module notes)."""
    return change.type is ChangeKind.UPDATE and (change.old is None or change.obj is None)


def _before_comparing(change: Change, *, resync: bool) -> bool | None:
    """What every ``*_changed`` predicate answers before it compares old and new.

    Adds and deletes pass; an update missing a side fails; a resync gets
    ``resync``. None: a complete, real update, for the caller to compare.
    """
    if change.type is not ChangeKind.UPDATE:
        return True
    if _incomplete_update(change):
        return False
    if change.is_resync:
        return resync
    return None


def is_resync(change: Change) -> bool:
    """True for a periodic resync (an update with the same object on both sides)."""
    return change.is_resync


def generation_changed(change: Change) -> bool:
    """Let an update through only when ``metadata.generation`` changed.

    The API server bumps the generation when the desired state changes: the
    spec of most kinds, but also a Deployment's annotations and the marking of
    any object for deletion (``deletionTimestamp``). So this drops status-only
    updates and most label-only ones. Kinds with no spec (ConfigMaps, Secrets,
    Namespaces, Leases) carry no generation at all: their updates always pass,
    as do adds, deletes and resyncs (see the module notes).
    """
    verdict = _before_comparing(change, resync=True)
    if verdict is not None:
        return verdict
    old = _meta(change.old).get("generation")
    new = _meta(change.obj).get("generation")
    if old is None or new is None:
        return True
    return old != new


def labels_changed(change: Change) -> bool:
    """Let an update through only when ``metadata.labels`` changed (adds, deletes, resyncs pass)."""
    verdict = _before_comparing(change, resync=True)
    if verdict is not None:
        return verdict
    return (_meta(change.old).get("labels") or {}) != (_meta(change.obj).get("labels") or {})


def annotations_changed(change: Change) -> bool:
    """Let an update through only when ``metadata.annotations`` changed (adds, deletes, resyncs pass)."""
    verdict = _before_comparing(change, resync=True)
    if verdict is not None:
        return verdict
    return (_meta(change.old).get("annotations") or {}) != (
        _meta(change.obj).get("annotations") or {}
    )


def resource_version_changed(change: Change) -> bool:
    """Let an update through only when ``metadata.resourceVersion`` changed.

    Every real change bumps the resourceVersion and a resync never does, so
    this is the predicate that drops resyncs. Adds and deletes pass.
    """
    verdict = _before_comparing(change, resync=False)
    if verdict is not None:
        return verdict
    return _meta(change.old).get("resourceVersion") != _meta(change.obj).get("resourceVersion")


def object_predicate(test: Callable[[Mapping[str, Any]], bool]) -> Predicate:
    """A predicate from a test of one object, as controller-runtime's ``NewPredicateFuncs`` builds one.

    Adds, deletes and resyncs pass when ``test(obj)`` is true; an update when
    ``test`` holds for its *new* object (the old one is not looked at: an
    object leaving the selection is not told, as in controller-runtime). A
    delete whose final state is unknown (a tombstone without an object)
    passes; an update without its new object does not.
    """
    if not callable(test):
        raise TypeError(f"object_predicate() takes a function obj -> bool, got {test!r}")

    def predicate(change: Change) -> bool:
        obj = change.obj
        if obj is None:
            return change.type is not ChangeKind.UPDATE
        return bool(test(obj))

    predicate.__name__ = predicate.__qualname__ = f"object_predicate({_name(test)})"
    return predicate


def label_selector(selector: Any) -> Predicate:
    """A predicate passing changes of objects whose labels match ``selector`` (``LabelSelectorPredicate``).

    ``selector`` is anything :func:`pyinformers.api.as_label_selector`
    takes: a string (``"app=web,tier!=db"``), a ``LabelSelector`` dict
    (``matchLabels``/``matchExpressions``) or a ``LabelSelector``; it is parsed
    once, here, so a bad selector fails at wiring time with ``ValueError``.

    Built with :func:`object_predicate`: an update passes when its *new*
    object matches (an update without an old object included), as in
    controller-runtime; an object leaving the selection is not told. A delete
    whose final state is unknown (a tombstone without an object) passes.
    """
    from pyinformers.api._selectors import as_label_selector

    parsed = as_label_selector(selector)
    matches = parsed.matches

    def selected(obj: Mapping[str, Any]) -> bool:
        return matches(_meta(obj).get("labels") or {})

    predicate = object_predicate(selected)
    predicate.__name__ = predicate.__qualname__ = f"label_selector({str(parsed)!r})"
    return predicate


def _name(predicate: Callable[..., Any]) -> str:
    return getattr(predicate, "__name__", None) or repr(predicate)


def _check(predicates: tuple[Any, ...], combinator: str) -> tuple[Predicate, ...]:
    for p in predicates:
        if not callable(p):
            raise TypeError(
                f"{combinator}() takes predicates (callables Change -> bool), got {p!r}"
            )
    return tuple(predicates)


def all_of(*predicates: Predicate) -> Predicate:
    """True when every predicate is (short-circuits; ``all_of()`` is always True)."""
    preds = _check(predicates, "all_of")

    def predicate(change: Change) -> bool:
        return all(p(change) for p in preds)

    predicate.__name__ = predicate.__qualname__ = f"all_of({', '.join(map(_name, preds))})"
    return predicate


def any_of(*predicates: Predicate) -> Predicate:
    """True when at least one predicate is (short-circuits; ``any_of()`` is always False)."""
    preds = _check(predicates, "any_of")

    def predicate(change: Change) -> bool:
        return any(p(change) for p in preds)

    predicate.__name__ = predicate.__qualname__ = f"any_of({', '.join(map(_name, preds))})"
    return predicate


def not_(predicate: Predicate) -> Predicate:
    """The negation of ``predicate``.

    Careful with resyncs: ``not_(generation_changed)`` drops them, since
    ``generation_changed`` lets them through.
    """
    (inner,) = _check((predicate,), "not_")

    def negated(change: Change) -> bool:
        return not inner(change)

    negated.__name__ = negated.__qualname__ = f"not_({_name(inner)})"
    return negated
