"""Predicates: plain functions over Events, and their combinators."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyinformers.controller import (
    Change,
    ChangeKind,
    all_of,
    annotations_changed,
    any_of,
    generation_changed,
    is_resync,
    label_selector,
    labels_changed,
    not_,
    object_predicate,
    resource_version_changed,
)


def obj(name="a", *, generation=None, rv="1", labels=None, annotations=None, status=None):
    md = {"name": name, "namespace": "ns", "resourceVersion": rv}
    if generation is not None:
        md["generation"] = generation
    if labels is not None:
        md["labels"] = labels
    if annotations is not None:
        md["annotations"] = annotations
    o = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": md, "spec": {"replicas": 1}}
    if status is not None:
        o["status"] = status
    return o


def update(old, new):
    return Change.from_update(old, new)


def test_generation_changed_drops_a_status_only_update():
    old = obj(generation=3, rv="10", status={"ready": 0})
    new = obj(generation=3, rv="11", status={"ready": 1})
    assert generation_changed(update(old, new)) is False


def test_generation_changed_passes_a_spec_update():
    assert (
        generation_changed(update(obj(generation=3, rv="10"), obj(generation=4, rv="11"))) is True
    )


def test_generation_changed_passes_adds_deletes_and_resyncs():
    o = obj(generation=1)
    assert generation_changed(Change.from_add(o))
    assert generation_changed(Change.from_delete(o))
    assert generation_changed(Change.from_update(o, o))


def test_generation_changed_passes_updates_of_kinds_without_a_generation():
    old, new = obj(rv="1"), obj(rv="2", labels={"x": "y"})
    assert generation_changed(update(old, new)) is True


def test_labels_and_annotations_changed_compare_only_their_field():
    old = obj(rv="1", labels={"a": "1"}, annotations={"n": "1"})
    relabelled = obj(rv="2", labels={"a": "2"}, annotations={"n": "1"})
    reannotated = obj(rv="2", labels={"a": "1"}, annotations={"n": "2"})
    assert labels_changed(update(old, relabelled)) and not labels_changed(update(old, reannotated))
    assert annotations_changed(update(old, reannotated)) and not annotations_changed(
        update(old, relabelled)
    )


def test_absent_and_empty_labels_are_the_same():
    assert labels_changed(update(obj(rv="1"), obj(rv="2", labels={}))) is False


def test_resource_version_changed_drops_resyncs_and_passes_real_updates():
    o = obj(rv="5")
    assert resource_version_changed(Change.from_update(o, o)) is False
    assert resource_version_changed(update(obj(rv="5"), obj(rv="6"))) is True
    assert resource_version_changed(update(obj(rv="5"), obj(rv="5"))) is False
    assert resource_version_changed(Change.from_add(o)) is True


def test_is_resync_is_identity_not_equality():
    o = obj()
    assert is_resync(Change.from_update(o, o))
    assert not is_resync(Change.from_update(obj(), obj()))


def test_label_selector_judges_an_update_by_its_new_object_only():
    web = label_selector("app=web")
    assert web(Change.from_add(obj(labels={"app": "web"})))
    assert not web(Change.from_add(obj(labels={"app": "db"})))
    # as controller-runtime's LabelSelectorPredicate: leaving the selection is not told
    assert not web(update(obj(rv="1", labels={"app": "web"}), obj(rv="2", labels={"app": "db"})))
    assert web(update(obj(rv="1", labels={"app": "db"}), obj(rv="2", labels={"app": "web"})))
    # an update without its old object: judged by the new one (issue 28)
    assert web(Change(ChangeKind.UPDATE, obj(labels={"app": "web"}), None))
    assert not web(Change(ChangeKind.UPDATE, None, obj(labels={"app": "web"})))


def test_an_object_predicate_tests_the_object_of_each_change_and_the_new_one_of_an_update():
    big = object_predicate(lambda o: o["metadata"].get("generation", 0) > 1)
    assert big(Change.from_add(obj(generation=2)))
    assert not big(Change.from_add(obj(generation=1)))
    assert big(update(obj(rv="1", generation=1), obj(rv="2", generation=2)))
    assert not big(update(obj(rv="1", generation=2), obj(rv="2", generation=1)))
    assert big(Change.from_delete(obj(generation=3)))
    assert "object_predicate" in big.__name__
    with pytest.raises(TypeError, match="obj -> bool"):
        object_predicate("not a function")


def test_label_selector_accepts_a_selector_dict_and_rejects_bad_syntax_at_wiring_time():
    p = label_selector({"matchLabels": {"app": "web"}})
    assert p(Change.from_add(obj(labels={"app": "web"})))
    with pytest.raises(ValueError):
        label_selector("app in (web")


def test_label_selector_passes_a_tombstone_without_an_object():
    class Tombstone:
        key = "ns/gone"
        obj = None

    assert label_selector("app=web")(Change.from_delete(Tombstone()))


def test_combinators_compose_and_name_themselves():
    yes, no = (lambda e: True), (lambda e: False)
    e = Change.from_add(obj())
    assert all_of(yes, yes)(e) and not all_of(yes, no)(e) and all_of()(e)
    assert any_of(no, yes)(e) and not any_of(no, no)(e) and not any_of()(e)
    assert not_(no)(e) and not not_(yes)(e)
    assert all_of(generation_changed, not_(labels_changed)).__name__ == (
        "all_of(generation_changed, not_(labels_changed))"
    )


def test_combinators_reject_non_callables():
    with pytest.raises(TypeError):
        all_of(generation_changed, "labels")
    with pytest.raises(TypeError):
        not_(None)


def test_not_generation_changed_drops_resyncs():
    o = obj(generation=1)
    assert not_(generation_changed)(Change.from_update(o, o)) is False


@given(
    st.lists(st.booleans(), max_size=6),
    st.sampled_from([ChangeKind.ADD, ChangeKind.UPDATE, ChangeKind.DELETE]),
)
def test_combinators_agree_with_all_and_any(values, kind):
    preds = [(lambda v: lambda e: v)(v) for v in values]
    e = Change(kind, obj(), obj() if kind is ChangeKind.UPDATE else None)
    assert all_of(*preds)(e) == all(values)
    assert any_of(*preds)(e) == any(values)
    assert not_(all_of(*preds))(e) == (not all(values))


@pytest.mark.parametrize(
    "predicate",
    [
        generation_changed,
        labels_changed,
        annotations_changed,
        resource_version_changed,
    ],
    ids=lambda p: getattr(p, "__name__", repr(p)),
)
def test_an_update_missing_its_old_or_new_object_is_dropped(predicate):
    # controller-runtime's predicates return false for such an event; so do ours (issue 12, item 8).
    present = obj(generation=2, rv="2", labels={"app": "web"}, annotations={"a": "1"})
    assert predicate(Change(ChangeKind.UPDATE, present, None)) is False
    assert predicate(Change(ChangeKind.UPDATE, None, present)) is False
