"""The watch and list protocol as informers meet it, held identical on both servers.

Run with ``--k8s-server=both``: every test here talks raw HTTP (through the
official client's ``ApiClient``) to the embedded server and to a real
kube-apiserver 1.36 and asserts the same answer from each. Each test pins a
rule where the embedded server once differed from the real one.

Watches use ``timeoutSeconds=1`` so the server ends them: a test reads a
whole stream and can assert what did *not* come.
"""

from __future__ import annotations

import base64
import secrets
import threading
from typing import Any

import orjson
import pytest

from pyinformers.api import ApiError, ResourceClient
from pyinformers.api._transport import release, send
from pyinformers.resources import CONFIGMAPS
from pyinformers.testing import eventually

pytestmark = pytest.mark.timeout(60)

END = "k8s.io/initial-events-end"
ROOT_CA = (
    "kube-root-ca.crt"  # a real namespace has it; the embedded one only with namespace_defaults
)


def _get(
    k8s: Any, path: str = "/api/v1/namespaces/{ns}/configmaps", **query: str
) -> tuple[int, Any]:
    """GET ``path`` (the test namespace's configmaps) with ``query``: (status, body or list of watch events)."""
    response = send(
        k8s.api_client(), "GET", path.format(ns=k8s.namespace), list(query.items()), timeout=30
    )
    try:
        raw = response.read()
    finally:
        release(response, reusable=True)
    if response.status == 200 and query.get("watch", "false").lower() not in ("0", "false"):
        return 200, [orjson.loads(line) for line in raw.splitlines() if line.strip()]
    return response.status, orjson.loads(raw)


def _seen(events: list[dict]) -> list[tuple[str, str]]:
    """(type, name) per event, ``("BOOKMARK", "end")`` for the initial-events-end bookmark.

    Left out: the namespace's root-CA ConfigMap, and plain bookmarks, which a
    real server sends whenever the resource changed anywhere (other tests'
    namespaces being cleaned up, say); the transcripts hold those to the rules.
    """
    seen = []
    for event in events:
        metadata = event["object"].get("metadata") or {}
        if event["type"] == "BOOKMARK":
            if (metadata.get("annotations") or {}).get(END) == "true":
                seen.append(("BOOKMARK", "end"))
        elif metadata.get("name") != ROOT_CA:
            seen.append((event["type"], metadata["name"]))
    return seen


def _seeded(k8s: Any) -> str:
    """Two ConfigMaps (created out of name order); returns the resourceVersion of a list after them."""
    client = ResourceClient(k8s.api_client(), CONFIGMAPS)
    for name in ("cm-b", "cm-a"):
        client.create({"metadata": {"name": name, "namespace": k8s.namespace}})
    return client.list(k8s.namespace).resource_version


@pytest.mark.parametrize("resource_version", [None, "", "0"], ids=["unset", "empty", "zero"])
def test_a_watch_without_resource_version_ends_its_initial_events_with_the_bookmark_when_bookmarks_are_allowed(
    k8s, resource_version
):
    list_rv = _seeded(k8s)
    query = {"watch": "true", "allowWatchBookmarks": "true", "timeoutSeconds": "1"}
    if resource_version is not None:
        query["resourceVersion"] = resource_version
    status, events = _get(
        k8s, **query
    )  # no sendInitialEvents: kube-apiserver 1.36 defaults it to true here
    assert status == 200
    assert _seen(events) == [("ADDED", "cm-a"), ("ADDED", "cm-b"), ("BOOKMARK", "end")]
    bookmark = events[-1]["object"]
    assert set(bookmark) == {"kind", "apiVersion", "metadata"} and bookmark["kind"] == "ConfigMap"
    assert int(bookmark["metadata"]["resourceVersion"]) >= int(
        list_rv
    )  # the state the ADDED events show


def test_a_watch_without_resource_version_has_no_end_marker_when_bookmarks_are_not_allowed(k8s):
    _seeded(k8s)
    status, events = _get(k8s, watch="true", timeoutSeconds="1")
    assert status == 200
    assert _seen(events) == [("ADDED", "cm-a"), ("ADDED", "cm-b")]


def test_a_watch_from_a_resource_version_gets_neither_initial_events_nor_the_end_marker(k8s):
    list_rv = _seeded(k8s)
    status, events = _get(
        k8s, watch="true", allowWatchBookmarks="true", resourceVersion=list_rv, timeoutSeconds="1"
    )
    assert (status, _seen(events)) == (200, [])


@pytest.mark.parametrize("resource_version", [None, "0"], ids=["unset", "zero"])
def test_send_initial_events_false_starts_a_watch_without_resource_version_from_now(
    k8s, resource_version
):
    _seeded(k8s)
    query = {
        "watch": "true",
        "sendInitialEvents": "false",
        "resourceVersionMatch": "NotOlderThan",
        "allowWatchBookmarks": "true",
        "timeoutSeconds": "1",
    }
    if resource_version is not None:
        query["resourceVersion"] = resource_version
    status, events = _get(k8s, **query)
    assert (status, _seen(events)) == (200, [])  # no ADDED for what exists, no end marker


def _causes(body: dict) -> list[tuple[str, str]]:
    return [(c["reason"], c["message"]) for c in body["details"]["causes"]]


UNLESS_RV = (
    "FieldValueForbidden",
    "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
)
WITH_CONTINUE = (
    "FieldValueForbidden",
    "Forbidden: resourceVersionMatch is forbidden when continue is provided",
)
UNLESS_INITIAL = (
    "FieldValueForbidden",
    "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
)
LIST_MATCHES = 'supported values: "Exact", "NotOlderThan", ""'


@pytest.mark.parametrize(
    "query, causes",
    [
        (
            {"resourceVersionMatch": "Bogus"},
            [UNLESS_RV, ("FieldValueNotSupported", f'Unsupported value: "Bogus": {LIST_MATCHES}')],
        ),
        ({"resourceVersionMatch": "Exact", "continue": "x"}, [UNLESS_RV, WITH_CONTINUE]),
        (
            {"resourceVersionMatch": "NotOlderThan", "resourceVersion": "1", "continue": "x"},
            [WITH_CONTINUE],
        ),
        (
            {"watch": "true", "resourceVersionMatch": "Exact"},
            [
                UNLESS_INITIAL,
                (
                    "FieldValueNotSupported",
                    'Unsupported value: "Exact": supported values: "NotOlderThan"',
                ),
            ],
        ),
        ({"watch": "true", "continue": "x"}, [WITH_CONTINUE]),
    ],
    ids=[
        "list-unsupported-match",
        "list-match-with-continue",
        "list-match-rv-continue",
        "watch-exact",
        "watch-continue",
    ],
)
def test_invalid_list_options_get_one_422_naming_every_broken_rule(k8s, query, causes):
    status, body = _get(k8s, **query)
    assert (status, body["reason"]) == (422, "Invalid")
    assert _causes(body) == causes
    listed = ", ".join(f"resourceVersionMatch: {message}" for _, message in causes)
    assert body["message"] == 'ListOptions.meta.k8s.io "" is invalid: ' + (
        f"[{listed}]" if len(causes) > 1 else listed
    )


@pytest.mark.parametrize(
    "query, message",
    [
        ({"limit": "abc"}, 'strconv.ParseInt: parsing "abc": invalid syntax'),
        ({"limit": ""}, 'strconv.ParseInt: parsing "": invalid syntax'),
        (
            {"limit": "9223372036854775808"},
            'strconv.ParseInt: parsing "9223372036854775808": value out of range',
        ),
        ({"timeoutSeconds": "abc"}, 'strconv.ParseInt: parsing "abc": invalid syntax'),
        (
            {"timeoutSeconds": "abc", "labelSelector": "a b"},
            'strconv.ParseInt: parsing "abc": invalid syntax',
        ),  # numbers first
        ({"watch": "true", "limit": "x"}, 'strconv.ParseInt: parsing "x": invalid syntax'),
    ],
    ids=[
        "limit-word",
        "limit-empty",
        "limit-too-big",
        "list-timeout",
        "numbers-before-selectors",
        "watch-limit",
    ],
)
def test_numbers_in_the_query_are_read_as_go_reads_them(k8s, query, message):
    status, body = _get(k8s, **query)
    assert (status, body["reason"], body["message"]) == (400, "BadRequest", message)


def test_a_negative_limit_means_no_limit(k8s):
    _seeded(k8s)
    status, body = _get(k8s, limit="-1")
    assert status == 200 and "continue" not in body["metadata"]
    assert [i["metadata"]["name"] for i in body["items"] if i["metadata"]["name"] != ROOT_CA] == [
        "cm-a",
        "cm-b",
    ]


def test_booleans_in_the_query_are_false_only_for_0_and_false(k8s):
    _seeded(k8s)
    # "yes" allows bookmarks, "FALSE" asks for no initial events, "" is a watch.
    _, events = _get(k8s, watch="", allowWatchBookmarks="yes", timeoutSeconds="1")
    assert _seen(events) == [("ADDED", "cm-a"), ("ADDED", "cm-b"), ("BOOKMARK", "end")]
    _, events = _get(
        k8s,
        watch="1",
        sendInitialEvents="FALSE",
        resourceVersionMatch="NotOlderThan",
        timeoutSeconds="1",
    )
    assert _seen(events) == []
    status, body = _get(k8s, watch="False")
    assert status == 200 and body["kind"] == "ConfigMapList"


def test_a_watch_from_a_malformed_resource_version_is_a_500_without_reason(k8s):
    status, body = _get(k8s, watch="true", resourceVersion="abc")
    assert status == 500 and "reason" not in body
    assert (
        body["message"]
        == 'resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax'
    )


NAME_RULE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
VALUE_RULE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
    "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


@pytest.mark.parametrize(
    "selector, message",
    [
        ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
        ("!", "unable to parse requirement: found '', expected: identifier"),
        ("=x", "found '=', expected: !, identifier, or 'end of string'"),
        ("a=b c", "found 'c', expected: ',' or 'end of string'"),
        ("a,,b", "found ',', expected: identifier after ','"),
        ("app in a", "unable to parse requirement: found 'a' expected: '('"),
        ("a in (b c)", "unable to parse requirement: found 'c', expected: ',' or ')'"),
        (
            "a>x",
            "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an integer",
        ),
        ("a=-x-", f'unable to parse requirement: values[0][a]: Invalid value: "-x-": {VALUE_RULE}'),
        (
            "a/=b",
            f'unable to parse requirement: <nil>: Invalid value: "a/": name part must be non-empty; name part {NAME_RULE}',
        ),
        (
            "x/y/z=1",
            f'unable to parse requirement: <nil>: Invalid value: "x/y/z": a valid label key {NAME_RULE} '
            "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
        ),
        (
            "a=" + "v" * 64,
            f'unable to parse requirement: values[0][a]: Invalid value: "{"v" * 64}": must be no more than 63 bytes',
        ),
    ],
)
def test_a_label_selector_the_server_cannot_parse_is_refused_in_its_words(k8s, selector, message):
    status, body = _get(k8s, labelSelector=selector)
    assert (status, body["reason"], body["message"]) == (400, "BadRequest", message)


@pytest.mark.parametrize(
    "selector, message",
    [
        ("metadata.name", "invalid selector: 'metadata.name'; can't understand 'metadata.name'"),
        ("metadata.name=c1=x", "invalid field selector: unescaped character in value: 61"),
        ("metadata.name=a\\b", "invalid field selector: invalid escape sequence: \\b"),
        (
            "zzz,aaa=1",
            "invalid selector: 'zzz,aaa=1'; can't understand 'zzz'",
        ),  # terms are checked in sorted order
        ("=x", '"" is not a known field selector: only "metadata.name", "metadata.namespace"'),
    ],
)
def test_a_field_selector_the_server_cannot_parse_is_refused_in_its_words(k8s, selector, message):
    status, body = _get(k8s, fieldSelector=selector)
    assert (status, body["reason"], body["message"]) == (400, "BadRequest", message)


def test_a_watch_refuses_a_bad_selector_as_a_list_does(k8s):
    status, body = _get(
        k8s, watch="true", labelSelector="a b", resourceVersion="abc"
    )  # the selector first
    assert (status, body["message"]) == (
        400,
        "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt",
    )


def test_label_keys_and_values_are_measured_in_bytes(k8s):
    client = ResourceClient(k8s.api_client(), CONFIGMAPS)
    with pytest.raises(ApiError) as caught:
        client.create(
            {
                "metadata": {
                    "name": "long",
                    "namespace": k8s.namespace,
                    "labels": {"a" * 64: "é" * 32},
                }
            }
        )
    causes = [c["message"] for c in caught.value.details["causes"]]
    assert causes == [
        f'Invalid value: "{"a" * 64}": name part must be no more than 63 bytes',
        f'Invalid value: "{"é" * 32}": must be no more than 63 bytes',
        f'Invalid value: "{"é" * 32}": {VALUE_RULE}',
    ]


def _token(payload: bytes) -> str:
    return base64.urlsafe_b64encode(payload).decode().rstrip("=")


@pytest.mark.parametrize(
    "token, problem",
    [
        ("a", "illegal base64 data at input byte 0"),
        ("abc=", "illegal base64 data at input byte 3"),
        ("garbage", "invalid character '\\u0081' looking for beginning of value"),
        (
            _token(b"123"),
            "json: cannot unmarshal number into Go value of type storage.continueToken",
        ),
        (_token(b"null"), "server does not recognize this encoded version "),
        (_token(b'{"v":"x"}'), "server does not recognize this encoded version x"),
        (
            _token(b'{"v":"meta.k8s.io/v1","rv":"5","start":"x"}'),
            "json: cannot unmarshal string into Go struct field continueToken.rv of type int64",
        ),
        (
            _token(b'{"v":"meta.k8s.io/v1","rv":0,"start":"x"}'),
            "incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        ),
        (
            _token(b'{"v":"meta.k8s.io/v1","rv":5,"start":""}'),
            "encoded start key empty (version meta.k8s.io/v1)",
        ),
        (_token(b'{"v":"meta.k8s.io/v1","rv":5,"start":"../x"}'), "../x"),
    ],
    ids=[
        "short",
        "padded",
        "not-json",
        "number",
        "null",
        "version",
        "rv-string",
        "rv-zero",
        "no-start",
        "traversal",
    ],
)
def test_a_continue_token_the_server_did_not_make_is_refused_in_its_words(k8s, token, problem):
    status, body = _get(k8s, limit="1", **{"continue": token})
    assert (status, body["reason"]) == (400, "BadRequest")
    assert body["message"] == f"invalid continue token: continue key is not valid: {problem}"


def test_a_bad_continue_token_is_refused_before_a_resource_version_beside_it(k8s):
    status, body = _get(k8s, resourceVersion="abc", **{"continue": "a"})
    assert (status, body["message"]) == (
        400,
        "invalid continue token: continue key is not valid: illegal base64 data at input byte 0",
    )
    list_rv = _seeded(k8s)
    first = _get(k8s, limit="1")[1]
    status, body = _get(k8s, resourceVersion=list_rv, **{"continue": first["metadata"]["continue"]})
    assert (status, body["message"]) == (
        400,
        "specifying resource version is not allowed when using continue",
    )


def test_a_streaming_list_from_a_resource_version_not_reached_yet_ends_with_an_error_event(k8s):
    future = str(int(_seeded(k8s)) + 100_000)
    status, events = _get(
        k8s,
        watch="true",
        sendInitialEvents="true",
        resourceVersionMatch="NotOlderThan",
        resourceVersion=future,
        allowWatchBookmarks="true",
        timeoutSeconds="10",
    )
    assert status == 200 and [e["type"] for e in events] == [
        "ERROR"
    ]  # then the stream ends, long before 10 s
    error = events[0]["object"]
    assert (error["code"], error["reason"]) == (504, "Timeout")
    assert error["message"].startswith(f"Timeout: Too large resource version: {future}, current: ")
    assert error["details"] == {
        "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
        "retryAfterSeconds": 1,
    }


@pytest.mark.parametrize(
    "path, selector, message",
    [
        (
            "/api/v1/namespaces",
            "metadata.namespace=x",
            "field label not supported: metadata.namespace",
        ),
        ("/api/v1/nodes", "metadata.namespace=x", "field label not supported: metadata.namespace"),
        ("/api/v1/namespaces/{ns}/services", "spec.clusterIP=None,spec.type=ClusterIP", None),
        (
            "/api/v1/namespaces/{ns}/services",
            "spec.externalName=x",
            "field label not supported: spec.externalName",
        ),
        (
            "/apis/apps/v1/namespaces/{ns}/replicasets",
            "status.replicas=1",
            '"status.replicas" is not a known field selector: only "metadata.name", "metadata.namespace"',
        ),
        ("/apis/batch/v1/namespaces/{ns}/jobs", "zz=1", 'field label "zz" not supported for Job'),
        (
            "/apis/events.k8s.io/v1/namespaces/{ns}/events",
            "regarding.kind=Pod,reportingController=x,type=Normal",
            None,
        ),
        (
            "/apis/events.k8s.io/v1/namespaces/{ns}/events",
            "source=x",
            "field label not supported: source",
        ),
        ("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "metadata.namespace=x", None),
    ],
    ids=[
        "namespaces",
        "nodes",
        "services",
        "services-unknown",
        "replicasets",
        "jobs",
        "events-v1",
        "events-v1-unknown",
        "crds",
    ],
)
def test_each_resource_is_selectable_by_the_fields_the_server_gives_it(
    k8s, path, selector, message
):
    status, body = _get(k8s, path, fieldSelector=selector)
    if message is None:
        assert status == 200 and body["kind"].endswith("List")
    else:
        assert (status, body["reason"], body["message"]) == (400, "BadRequest", message)


def _create(k8s: Any, plural: str, body: dict) -> dict:
    response = send(
        k8s.api_client(),
        "POST",
        f"/api/v1/namespaces/{k8s.namespace}/{plural}",
        body=body,
        timeout=30,
    )
    try:
        assert response.status == 201, response.read()
        return orjson.loads(response.read())
    finally:
        release(response, reusable=True)


def _pod(name: str, resources: dict) -> dict:
    return {
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "image": "x", "resources": resources}]},
        "status": {"phase": "Running"},
    }  # a create's status is not the client's to set


def test_a_new_pod_is_pending_with_its_qos_class_and_selectable_by_defaulted_fields(k8s):
    pods = {
        "best-effort": _create(k8s, "pods", _pod("best-effort", {})),
        "burstable": _create(k8s, "pods", _pod("burstable", {"requests": {"cpu": "1"}})),
        "guaranteed": _create(
            k8s, "pods", _pod("guaranteed", {"limits": {"cpu": "1", "memory": "1Gi"}})
        ),
    }
    assert {name: pod["status"] for name, pod in pods.items()} == {
        "best-effort": {"phase": "Pending", "qosClass": "BestEffort"},
        "burstable": {"phase": "Pending", "qosClass": "Burstable"},
        "guaranteed": {"phase": "Pending", "qosClass": "Guaranteed"},
    }
    guaranteed = pods["guaranteed"]["spec"]
    assert guaranteed["containers"][0]["resources"]["requests"] == {
        "cpu": "1",
        "memory": "1Gi",
    }  # from the limits
    assert (
        guaranteed["enableServiceLinks"],
        guaranteed["priority"],
        guaranteed["preemptionPolicy"],
    ) == (True, 0, "PreemptLowerPriority")
    assert sorted(t["key"] for t in guaranteed["tolerations"]) == [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ]
    # spec.hostNetwork is left out of the JSON, yet a selector reads it as "false"
    status, body = _get(
        k8s,
        "/api/v1/namespaces/{ns}/pods",
        fieldSelector="spec.hostNetwork=false,status.phase=Pending",
    )
    assert status == 200 and sorted(i["metadata"]["name"] for i in body["items"]) == sorted(pods)
    status, events = _get(
        k8s,
        "/api/v1/namespaces/{ns}/pods",
        watch="true",
        fieldSelector="spec.hostNetwork!=false",
        timeoutSeconds="1",
    )
    assert (status, events) == (200, [])


def test_a_new_service_gets_its_defaults_and_a_cluster_ip(k8s):
    service = _create(
        k8s,
        "services",
        {
            "metadata": {"name": "web"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]},
        },
    )
    spec = service["spec"]
    assert (spec["type"], spec["sessionAffinity"], spec["internalTrafficPolicy"]) == (
        "ClusterIP",
        "None",
        "Cluster",
    )
    assert spec["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    assert spec["clusterIP"].startswith("10.0.0.") and spec["clusterIPs"] == [spec["clusterIP"]]
    assert (spec["ipFamilies"], spec["ipFamilyPolicy"], service["status"]) == (
        ["IPv4"],
        "SingleStack",
        {"loadBalancer": {}},
    )
    headless = _create(
        k8s,
        "services",
        {"metadata": {"name": "peers"}, "spec": {"clusterIP": "None", "ports": [{"port": 80}]}},
    )["spec"]
    assert (headless["clusterIPs"], headless["ipFamilies"], headless["ipFamilyPolicy"]) == (
        ["None"],
        ["IPv4", "IPv6"],
        "RequireDualStack",
    )
    status, body = _get(
        k8s,
        "/api/v1/namespaces/{ns}/services",
        fieldSelector="spec.type=ClusterIP,spec.clusterIP!=None",
    )
    assert status == 200 and [i["metadata"]["name"] for i in body["items"]] == ["web"]


def _pages(k8s: Any, **query: str) -> list[tuple[list[str], bool]]:
    """Every page of a paged list: (names, whether it carried a continue token)."""
    pages, token = [], None
    while True:
        status, body = _get(k8s, **query, **({"continue": token} if token else {}))
        assert status == 200, body
        token = body["metadata"].get("continue")
        pages.append(([i["metadata"]["name"] for i in body["items"]], bool(token)))
        if not token:
            return pages


def test_a_full_page_of_a_selected_list_continues_while_any_object_follows_even_into_an_empty_page(
    k8s,
):
    client = ResourceClient(k8s.api_client(), CONFIGMAPS)
    for name, labels in (("a", {"app": "x"}), ("b", {"app": "x"}), ("z", {})):
        client.create({"metadata": {"name": name, "namespace": k8s.namespace, "labels": labels}})
    assert _pages(k8s, labelSelector="app=x", limit="2") == [(["a", "b"], True), ([], False)]
    assert _pages(k8s, labelSelector="app=x", limit="1") == [
        (["a"], True),
        (["b"], True),
        ([], False),
    ]
    # metadata.name=X makes the real server read that one key: nothing can follow
    assert _pages(k8s, fieldSelector="metadata.name=a", limit="1") == [(["a"], False)]


LEGACY = "/api/v1/watch/namespaces/{ns}/configmaps"


def test_the_legacy_watch_path_of_a_named_object_watches_that_object_only(k8s):
    _seeded(k8s)
    status, events = _get(
        k8s, LEGACY + "/cm-a", watch="true", allowWatchBookmarks="true", timeoutSeconds="1"
    )
    assert (status, _seen(events)) == (200, [("ADDED", "cm-a"), ("BOOKMARK", "end")])
    status, events = _get(k8s, LEGACY + "/missing", watch="true", timeoutSeconds="1")
    assert (status, events) == (200, [])
    status, body = _get(k8s, LEGACY + "/cm-a", fieldSelector="metadata.name=cm-b")
    assert (status, body["message"]) == (
        400,
        "fieldSelector metadata.name doesn't match requested name",
    )


def test_the_legacy_watch_path_without_watch_true_checks_its_options_as_a_list_and_sends_no_end_marker(
    k8s,
):
    _seeded(k8s)
    response = send(
        k8s.api_client(),
        "GET",
        LEGACY.format(ns=k8s.namespace),
        [("allowWatchBookmarks", "true"), ("timeoutSeconds", "1")],
        timeout=30,
    )
    try:
        events = [orjson.loads(line) for line in response.read().splitlines() if line.strip()]
    finally:
        release(response, reusable=True)
    assert (response.status, _seen(events)) == (200, [("ADDED", "cm-a"), ("ADDED", "cm-b")])
    status, body = _get(k8s, LEGACY, sendInitialEvents="true", resourceVersionMatch="NotOlderThan")
    assert (status, _causes(body)) == (
        422,
        [UNLESS_RV, ("FieldValueForbidden", "Forbidden: sendInitialEvents is forbidden for list")],
    )


def test_the_watches_of_a_custom_resource_end_once_its_crd_is_deleted(k8s):
    group = f"w{secrets.token_hex(4)}.example.com"
    crd_path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/things.{group}"
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"things.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {
                "plural": "things",
                "singular": "thing",
                "kind": "Thing",
                "listKind": "ThingList",
            },
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }
    api = k8s.api_client()

    def call(method: str, path: str, body: Any = None, query: tuple = ()) -> int:
        response = send(api, method, path, list(query), body=body, timeout=30)
        try:
            response.read()
            return response.status
        finally:
            release(response, reusable=True)

    assert call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd) == 201
    things = f"/apis/{group}/v1/namespaces/{k8s.namespace}/things"
    thing = {"apiVersion": f"{group}/v1", "kind": "Thing", "metadata": {"name": "t1"}}
    eventually(lambda: call("POST", things, thing) == 201, 30, what="the custom resource served")
    events: list[dict] = []
    response = send(
        api,
        "GET",
        things,
        [("watch", "true"), ("allowWatchBookmarks", "true"), ("timeoutSeconds", "60")],
        timeout=90,
    )

    def read() -> None:
        for line in response:
            if line.strip():
                events.append(orjson.loads(line))

    reader = threading.Thread(target=read, name="test-watch-reader", daemon=True)
    reader.start()
    try:
        eventually(
            lambda: len(events) >= 2, 30, what="the initial events"
        )  # ADDED t1 and the end marker
        assert call("DELETE", crd_path) == 200
        reader.join(30)
        assert not reader.is_alive(), f"the watch is still open after its CRD was deleted: {events}"
    finally:
        release(response, reusable=False)
    assert [
        (e["type"], e["object"]["metadata"].get("name")) for e in events if e["type"] != "BOOKMARK"
    ] == [("ADDED", "t1"), ("DELETED", "t1")]
