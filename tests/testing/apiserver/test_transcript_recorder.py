"""The transcript recorder (``tests/support/record_transcripts.py``): its templates, its normalisation, a round trip.

The recorder itself runs against a real control plane (``python -m
tests.support.record_transcripts``); these tests hold what can be held without
one: every scenario template is well formed and refers only to earlier steps,
the normalisation follows the rules of ``tests/transcripts/README.md``, and a
scenario recorded on the embedded server replays on a fresh one.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.support import record_transcripts as rt

_REF = re.compile(r"\{\{([^{}]+)\}\}")
_TEMPLATE_KEYS = {
    "step",
    "note",
    "request",
    "before",
    "until",
    "keep",
    "summary",
    "verbatim",
    "watch",
    "during",
    "wait_events",
    "stop_after",
    "during_action",
}


def _refs(value):
    text = json.dumps(value)
    found = [m.group(1).split(".", 1)[0] for m in _REF.finditer(text)]
    found += re.findall(r'"\$copy": "([^"]+)"', text)
    return [f for f in found if f != "future-rv"]


@pytest.mark.parametrize("name", sorted(p.stem for p in rt.TEMPLATES.glob("*.jsonl")))
def test_every_template_is_well_formed_and_refers_only_to_earlier_steps(name):
    templates = rt.load_templates(rt.TEMPLATES / f"{name}.jsonl")
    assert name in rt.SCENARIOS, f"{name}.jsonl is not registered in SCENARIOS"
    seen: list[str] = []
    for i, t in enumerate(templates):
        assert set(t) <= _TEMPLATE_KEYS, f"{t['step']}: unknown keys {set(t) - _TEMPLATE_KEYS}"
        assert t["step"] not in seen, f"step {t['step']!r} twice"
        for ref in _refs(t["request"]) + _refs(t.get("before", [])):
            assert ref in seen, f"{t['step']} refers to {ref!r}, which is not an earlier step"
        for condition in [t.get("until")] + [b.get("until") for b in t.get("before", [])]:
            if condition is not None:
                rt._predicate(condition)
        if t.get("during"):
            assert t.get("watch") and i + t["during"] < len(templates), (
                f"{t['step']}: 'during' past the end or not a watch"
            )
        seen.append(t["step"])


def test_every_scenario_of_the_registry_is_recorded_in_the_repository():
    recorded = {p.stem for p in (rt.DEFAULT_ROOT).glob("*/*.jsonl")}
    if not recorded:
        pytest.skip("no recordings under tests/transcripts yet")
    assert set(rt.SCENARIOS) <= recorded, (
        f"scenarios never recorded: {sorted(set(rt.SCENARIOS) - recorded)}"
    )


def _line(step, request, response):
    return {
        "step": step,
        "note": "",
        "request": {
            "method": "GET",
            "path": "/x",
            "query": {},
            "headers": {},
            "body": None,
            **request,
        },
        "response": {"status": 200, "content_type": "application/json", **response},
    }


def test_normalisation_ranks_resource_versions_and_numbers_uids_by_first_appearance():
    uid_a, uid_b = "0f0e0d0c-0b0a-4900-8800-777766665555", "11111111-2222-4333-8444-555555555555"
    lines = [
        _line(
            "a",
            {},
            {
                "body": {
                    "metadata": {
                        "uid": uid_b,
                        "resourceVersion": "907",
                        "creationTimestamp": "2026-12-02T05:00:00Z",
                    }
                }
            },
        ),
        _line(
            "b",
            {"query": {"resourceVersion": "45"}},
            {
                "body": {
                    "metadata": {"uid": uid_a, "resourceVersion": "1200"},
                    "message": "too old resource version: 45 (907)",
                    "renewTime": "2030-01-01T00:00:05.000000Z",
                }
            },
        ),
        _line(
            "c",
            {"body": {"metadata": {"resourceVersion": "1", "uid": uid_b}}},
            {
                "body": {
                    "metadata": {
                        "resourceVersion": "0",
                        "managedFields": [{"time": "2026-12-02T05:00:00.123456Z"}],
                    }
                }
            },
        ),
    ]
    a, b, c = rt.normalise(lines)
    assert a["response"]["body"]["metadata"] == {
        "uid": "<uid:1>",
        "resourceVersion": "<rv:2>",
        "creationTimestamp": "<time>",
    }
    assert b["request"]["query"] == {"resourceVersion": "<rv:1>"}
    assert b["response"]["body"]["metadata"] == {"uid": "<uid:2>", "resourceVersion": "<rv:3>"}
    assert b["response"]["body"]["message"] == "too old resource version: <rv:1> (<rv:2>)"
    assert b["response"]["body"]["renewTime"] == "2030-01-01T00:00:05.000000Z", (
        "the recorder's own 2030 times are kept"
    )
    assert c["request"]["body"]["metadata"] == {"resourceVersion": "1", "uid": "<uid:1>"}
    assert c["response"]["body"]["metadata"] == {
        "resourceVersion": "0",
        "managedFields": [{"time": "<microtime>"}],
    }


def test_normalisation_replaces_server_made_continue_tokens_generated_names_and_secrets_but_not_verbatim_lines():
    lines = [
        _line(
            "page",
            {},
            {
                "body": {
                    "metadata": {"continue": "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTJ9"},
                    "items": [
                        {
                            "metadata": {"name": "kube-root-ca.crt"},
                            "data": {"ca.crt": "-----BEGIN CERTIFICATE-----"},
                        }
                    ],
                }
            },
        ),
        _line(
            "next",
            {"query": {"continue": "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTJ9"}},
            {"body": {}},
        ),
        _line("made-up", {"query": {"continue": "not-a-token"}}, {"body": {}}),
        _line("gen", {}, {"body": {"metadata": {"generateName": "gen-", "name": "gen-x7k2p"}}}),
        _line(
            "delete",
            {"path": "/api/v1/namespaces/n/configmaps/gen-x7k2p"},
            {"body": {"status": {"token": "eyJhbGciOiJSUzI1NiJ9.eyJhdWQiOlsiYSJdfQ.c2ln"}}},
        ),
        {**_line("version", {}, {"body": {"buildDate": "2026-01-01T00:00:00Z"}}), "verbatim": True},
    ]
    page, nxt, made_up, gen, delete, version = rt.normalise(lines)
    assert page["response"]["body"]["metadata"]["continue"] == "<continue:1>"
    assert page["response"]["body"]["items"][0]["data"]["ca.crt"] == "<ca.crt>"
    assert nxt["request"]["query"]["continue"] == "<continue:1>"
    assert made_up["request"]["query"]["continue"] == "not-a-token"
    assert gen["response"]["body"]["metadata"]["name"] == "gen-<suffix>"
    assert delete["request"]["path"] == "/api/v1/namespaces/n/configmaps/gen-<suffix>"
    assert delete["response"]["body"]["status"]["token"] == "<token>"
    assert (
        version["response"]["body"] == {"buildDate": "2026-01-01T00:00:00Z"}
        and "verbatim" not in version
    )


def test_trimming_keeps_named_entries_and_their_subresources_and_counts_the_whole_list():
    body = {
        "resources": [
            {"name": "pods"},
            {"name": "pods/status"},
            {"name": "services"},
            {"name": "podtemplates"},
        ]
    }
    trimmed, total = rt._keep(body, {"body.resources": ["pods"]})
    assert trimmed == {"resources": [{"name": "pods"}, {"name": "pods/status"}]}
    assert total == 4


class _EmbeddedControlPlane:
    """What the recorder needs of a control plane, served by the embedded server over plain HTTP."""

    def __init__(self, server):
        self.server, self.url, self.token, self.ca_cert = server, server.url, server.token, None

    def restart_apiserver(self):
        self.server.restart()


@pytest.mark.parametrize("name", ["configmap-crud", "watch-selectors"])
def test_a_scenario_recorded_on_the_embedded_server_replays_on_a_fresh_one(name, tmp_path):
    from pyinformers.testing import ApiServer

    try:
        from tests.support import transcripts
    except ImportError:  # before the layout moves the replayer
        from pyinformers.testing import transcripts  # type: ignore[no-redef]

    server = ApiServer(token="recorder-token", namespace_defaults=True).start()
    try:
        recorder = rt.Recorder(_EmbeddedControlPlane(server), timeout=10.0)
        rt.SCENARIOS[name].run(recorder)
        lines = recorder.transcript()
    finally:
        server.stop()
    path = tmp_path / f"{name}.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    results = transcripts.replay(path)
    assert len(results) == len(lines)
    assert all(r.ok for r in results), transcripts.summarize(results)


def test_a_scenario_written_as_a_function_records_its_requests_and_a_watch_with_its_concurrent_steps():
    from pyinformers.testing import ApiServer

    server = ApiServer(token="recorder-token", namespace_defaults=True).start()
    try:
        r = rt.Recorder(_EmbeddedControlPlane(server), timeout=10.0)
        ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tx-fn"}}
        r.request("create-namespace", "POST", "/api/v1/namespaces", note="its namespace", body=ns)
        listed = r.request("list", "GET", "/api/v1/namespaces/tx-fn/configmaps", note="the start")
        query = {
            "watch": "true",
            "resourceVersion": listed.body["metadata"]["resourceVersion"],
            "timeoutSeconds": "1",
        }
        with r.watch("watch", "/api/v1/namespaces/tx-fn/configmaps", note="a watch", query=query):
            cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}}
            r.request(
                "create",
                "POST",
                "/api/v1/namespaces/tx-fn/configmaps",
                note="(during the watch) a",
                body=cm,
            )
        lines = r.transcript()
    finally:
        server.stop()
    assert [line["step"] for line in lines] == ["create-namespace", "list", "watch", "create"]
    watch, create = lines[2], lines[3]
    assert (
        watch["request"]["query"]["resourceVersion"]
        == lines[1]["response"]["body"]["metadata"]["resourceVersion"]
    )
    assert [e["type"] for e in watch["response"]["events"]] == ["ADDED"]
    assert (
        watch["response"]["events"][0]["object"]["metadata"]["uid"]
        == create["response"]["body"]["metadata"]["uid"]
    )
    assert watch["response"]["stream_end"] == "closed by server"
    assert watch["note"].startswith("a watch [timing in this run, informative only: ADDED@")
