"""Status conditions: apimachinery's SetStatusCondition semantics, validation, and a model."""

from __future__ import annotations

import pytest
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from pyinformers.api.meta import (
    find_status_condition,
    format_time,
    is_status_condition_false,
    is_status_condition_present_and_equal,
    is_status_condition_true,
    remove_status_condition,
    set_status_condition,
)

T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def test_a_new_condition_is_appended_with_the_transition_time_now():
    obj: dict = {"metadata": {"name": "a"}}
    assert set_status_condition(obj, type="Ready", status="False", reason="Starting", now=T0)
    assert obj["status"]["conditions"] == [
        {
            "type": "Ready",
            "status": "False",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
            "reason": "Starting",
            "message": "",
        }
    ]


def test_the_transition_time_moves_only_when_the_status_changes():
    conditions: list = []
    set_status_condition(conditions, type="Ready", status="False", reason="Starting", now=T0)
    assert set_status_condition(
        conditions, type="Ready", status="False", reason="Waiting", message="m", now=T0 + 60
    )
    assert conditions[0]["lastTransitionTime"] == format_time(T0)
    assert conditions[0]["reason"] == "Waiting" and conditions[0]["message"] == "m"
    assert set_status_condition(
        conditions, type="Ready", status="True", reason="Waiting", message="m", now=T0 + 120
    )
    assert conditions[0]["lastTransitionTime"] == format_time(T0 + 120)


def test_setting_the_same_condition_again_changes_nothing_and_says_so():
    conditions: list = []
    set_status_condition(
        conditions, type="Ready", status="True", reason="Ok", observed_generation=3, now=T0
    )
    before = [dict(c) for c in conditions]
    assert not set_status_condition(
        conditions, type="Ready", status="True", reason="Ok", observed_generation=3, now=T0 + 5
    )
    assert conditions == before


def test_observed_generation_is_updated_under_the_same_status():
    conditions: list = []
    set_status_condition(
        conditions, type="Ready", status="True", reason="Ok", observed_generation=1, now=T0
    )
    assert set_status_condition(
        conditions, type="Ready", status="True", reason="Ok", observed_generation=2, now=T0 + 1
    )
    assert conditions[0]["observedGeneration"] == 2
    assert conditions[0]["lastTransitionTime"] == format_time(T0)


def test_find_remove_and_the_status_tests():
    obj: dict = {}
    assert find_status_condition(obj, "Ready") is None and obj == {}  # reading creates nothing
    set_status_condition(obj, type="Ready", status="True", reason="Ok", now=T0)
    set_status_condition(obj, type="Degraded", status="False", reason="Fine", now=T0)
    set_status_condition(obj, type="Progressing", status="Unknown", reason="Checking", now=T0)
    assert is_status_condition_true(obj, "Ready") and not is_status_condition_false(obj, "Ready")
    assert is_status_condition_false(obj, "Degraded")
    assert not is_status_condition_true(obj, "Progressing") and not is_status_condition_false(
        obj, "Progressing"
    )
    assert is_status_condition_present_and_equal(obj, "Progressing", "Unknown")
    assert not is_status_condition_true(obj, "Missing")
    assert remove_status_condition(obj, "Degraded")
    assert not remove_status_condition(obj, "Degraded")
    assert [c["type"] for c in obj["status"]["conditions"]] == ["Ready", "Progressing"]


@pytest.mark.parametrize(
    "kwargs, says",
    [
        (dict(type="", status="True", reason="Ok"), "condition type is required"),
        (dict(type="not a name", status="True", reason="Ok"), "not a qualified name"),
        (
            dict(type="Ready", status="true", reason="Ok"),
            "status must be one of True, False, Unknown",
        ),
        (
            dict(type="Ready", status=True, reason="Ok"),
            "status must be one of True, False, Unknown",
        ),
        (dict(type="Ready", status="True", reason=""), "reason is required"),
        (dict(type="Ready", status="True", reason="not camel case"), "must be CamelCase"),
        (
            dict(type="Ready", status="True", reason="Ok", observed_generation=-1),
            "observed_generation",
        ),
        (dict(type="Ready", status="True", reason="Ok", message="x" * 32769), "at most 32768"),
    ],
)
def test_a_condition_the_server_would_refuse_is_a_clear_error_and_changes_nothing(kwargs, says):
    obj: dict = {
        "status": {
            "conditions": [{"type": "Ready", "status": "False", "reason": "Old", "message": ""}]
        }
    }
    with pytest.raises(ValueError, match=says):
        set_status_condition(obj, now=T0, **kwargs)
    assert obj == {
        "status": {
            "conditions": [{"type": "Ready", "status": "False", "reason": "Old", "message": ""}]
        }
    }


def test_a_domain_qualified_condition_type_is_accepted():
    conditions: list = []
    assert set_status_condition(
        conditions, type="example.com/Synced", status="True", reason="Done:ok", now=T0
    )


TYPES = st.sampled_from(["Ready", "Available", "example.com/Synced"])
STATUSES = st.sampled_from(["True", "False", "Unknown"])
REASONS = st.sampled_from(["A", "B", "C1"])


class ConditionsAgainstAModel(RuleBasedStateMachine):
    """A condition list against a dict type -> (status, reason, message, generation, time of last transition)."""

    def __init__(self) -> None:
        super().__init__()
        self.obj: dict = {"metadata": {"name": "x"}}
        self.model: dict = {}
        self.order: list = []
        self.now = T0

    @rule(
        type_=TYPES,
        status=STATUSES,
        reason=REASONS,
        message=st.sampled_from(["", "m"]),
        generation=st.none() | st.integers(0, 3),
        elapsed=st.integers(1, 100),
    )
    def set(self, type_, status, reason, message, generation, elapsed):
        self.now += elapsed
        old = self.model.get(type_)
        if old is None:
            new = (status, reason, message, generation, self.now)
            self.order.append(type_)
        else:
            gen = old[3] if generation is None else generation
            new = (status, reason, message, gen, self.now if old[0] != status else old[4])
        changed = set_status_condition(
            self.obj,
            type=type_,
            status=status,
            reason=reason,
            message=message,
            observed_generation=generation,
            now=self.now,
        )
        assert changed == (new != old)
        self.model[type_] = new

    @rule(type_=TYPES)
    def remove(self, type_):
        assert remove_status_condition(self.obj, type_) == (type_ in self.model)
        if self.model.pop(type_, None) is not None:
            self.order.remove(type_)

    @invariant()
    def the_list_matches_the_model(self):
        conditions = (self.obj.get("status") or {}).get("conditions") or []
        assert [c["type"] for c in conditions] == self.order
        for c in conditions:
            status, reason, message, gen, when = self.model[c["type"]]
            assert (c["status"], c["reason"], c["message"], c.get("observedGeneration")) == (
                status,
                reason,
                message,
                gen,
            )
            assert c["lastTransitionTime"] == format_time(when)
            assert is_status_condition_true(self.obj, c["type"]) == (status == "True")


TestConditionsAgainstAModel = ConditionsAgainstAModel.TestCase
