"""Typed API errors built from Status objects and HTTP codes."""

from __future__ import annotations

import pickle

import pytest

from pyinformers.api import _errors as e


def status(code, reason, message="msg", **extra):
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
        **extra,
    }


@pytest.mark.parametrize(
    "code, reason, cls",
    [
        (400, "BadRequest", e.BadRequest),
        (401, "Unauthorized", e.Unauthorized),
        (403, "Forbidden", e.Forbidden),
        (404, "NotFound", e.NotFound),
        (405, "MethodNotAllowed", e.MethodNotAllowed),
        (409, "Conflict", e.Conflict),
        (409, "AlreadyExists", e.AlreadyExists),
        (410, "Expired", e.Gone),
        (410, "Gone", e.Gone),
        (422, "Invalid", e.Invalid),
        (429, "TooManyRequests", e.TooManyRequests),
        (500, "InternalError", e.ServerError),
        (503, "ServiceUnavailable", e.ServerError),
        (504, "Timeout", e.ServerError),
    ],
)
def test_each_code_and_reason_maps_to_its_class_and_keeps_the_status(code, reason, cls):
    body = status(code, reason, "it failed")
    error = e.error_from_status(body, code)
    assert type(error) is cls
    assert isinstance(error, e.ApiError)
    assert (error.code, error.reason, error.message, error.status) == (
        code,
        reason,
        "it failed",
        body,
    )
    assert reason in str(error) and "it failed" in str(error)


def test_already_exists_is_a_conflict():
    error = e.error_from_status(status(409, "AlreadyExists"), 409)
    assert isinstance(error, e.Conflict)


def test_a_watch_error_event_without_an_http_code_uses_the_status_code_then_the_reason():
    assert isinstance(e.error_from_status(status(410, "Expired"), 0), e.Gone)
    gone = e.error_from_status({"kind": "Status", "reason": "Expired", "message": "too old"}, 0)
    assert isinstance(gone, e.Gone) and gone.code == 410


def test_retry_after_comes_from_the_header_case_insensitively_or_from_the_status_details():
    assert e.error_from_status(None, 429, headers={"Retry-After": "4"}).retry_after == 4.0
    assert e.error_from_status(None, 429, headers={"retry-after": "2"}).retry_after == 2.0
    details = status(429, "TooManyRequests", details={"retryAfterSeconds": 9})
    assert e.error_from_status(details, 429).retry_after == 9.0
    assert e.error_from_status(None, 429).retry_after is None
    assert e.error_from_status(None, 429, headers={"Retry-After": "soon"}).retry_after is None


def test_retry_after_as_an_http_date_in_the_past_means_now():
    assert e.parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0


def test_a_missing_or_foreign_body_still_gives_the_class_of_the_code():
    error = e.error_from_status(None, 404)
    assert type(error) is e.NotFound and error.status == {} and error.message == "HTTP 404"
    assert type(e.error_from_status({"unexpected": 1}, 502)) is e.ServerError
    assert type(e.error_from_status(None, 418)) is e.ApiError


def test_errors_survive_pickling():
    error = e.error_from_status(status(429, "TooManyRequests"), 429, headers={"Retry-After": "3"})
    copy = pickle.loads(pickle.dumps(error))
    assert (
        type(copy) is e.TooManyRequests and copy.retry_after == 3.0 and copy.status == error.status
    )
