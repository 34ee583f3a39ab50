"""Object data never reaches the logs (issue 12, item 2).

Every failure path an object can take through an informer and a controller's
handlers is run with a Secret; the Secret's data must be absent from every
log record, at every level, message and traceback included. Log lines name
objects by kind, namespace, name, uid and resourceVersion only.
"""

from __future__ import annotations

import logging

import pytest

from pyinformers.api._watch import WatchEvent
from pyinformers.cache import ResourceEventHandlerFuncs
from pyinformers.controller import EnqueueMapped
from pyinformers.testing import FakeListerWatcher, eventually
from tests.cache.test_informer import make_informer  # noqa: F401

pytestmark = pytest.mark.timeout(60)

SECRET_B64 = "c3VwZXItc2VjcmV0LXBhc3N3b3Jk"  # base64 of the value below
SECRET_TEXT = "super-secret-password"


def secret(name, rv, **metadata):
    md = {
        "name": name,
        "namespace": "default",
        "uid": f"uid-{name}",
        "resourceVersion": str(rv),
        **metadata,
    }
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": md,
        "type": "Opaque",
        "data": {"password": SECRET_B64},
        "stringData": {"password": SECRET_TEXT},
    }


def failing_transform(obj):
    if obj.get("kind") == "Secret" and obj["metadata"].get("labels", {}).get("fail") == "transform":
        raise ValueError("cannot transform this object")
    return obj


def index_of_data(obj):
    if obj["metadata"].get("labels", {}).get("fail") == "index-string":
        return obj["data"]["password"]  # a bug: a bare string (of secret data!) instead of a list
    if obj["metadata"].get("labels", {}).get("fail") == "index":
        raise KeyError("missing")
    return []


def test_secret_data_is_absent_from_every_log_record_on_every_failure_path(make_informer, caplog):
    caplog.set_level(logging.DEBUG)
    lw = FakeListerWatcher([secret("listed", 1)])
    nameless = secret("nameless", 1)
    del nameless["metadata"]["name"]
    lw.objects["(nameless)"] = nameless  # listed without a name: no key
    informer = make_informer(lw, transform=failing_transform, indexers={"data": index_of_data})

    class Queue:
        def add(self, key):
            pass

    def mapper(obj):
        raise RuntimeError("mapping failed")

    def handler_add(obj, initial):
        raise RuntimeError("handler failed")

    informer.add_event_handler(ResourceEventHandlerFuncs(on_add=handler_add))
    informer.add_event_handler(EnqueueMapped(mapper).bind(Queue()))
    informer.start()
    assert informer.wait_for_cache_sync(10)
    stream = lw.wait_for_watch()
    for i, fail in enumerate(["transform", "index", "index-string", "none"], start=2):
        stream.push(WatchEvent("ADDED", secret(f"s-{fail}", i, labels={"fail": fail})))
    stream.push(WatchEvent("DELETED", secret("listed", 9, labels={"fail": "transform"})))
    stream.push(WatchEvent("WEIRD", secret("odd", 10)))
    # A watch event without a name: the reflector re-watches (and says so in the log).
    stream.push(
        WatchEvent(
            "ADDED",
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"namespace": "default"},
                "data": {"password": SECRET_B64},
            },
        )
    )
    eventually(
        lambda: (
            informer.object_errors().get("transform", 0) >= 2
            and informer.object_errors().get("index", 0) >= 2
            and informer.object_errors().get("key", 0) >= 1
            and informer.indexer.get_by_key("default/listed") is None
            and informer.reflector.stats.restarts >= 1
        ),
        what="every failure path to be taken",
    )
    eventually(lambda: all(r.backlog() == 0 for r in informer.registrations()))
    informer.stop()

    formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
    texts = [formatter.format(record) for record in caplog.records]
    assert any("Secret default/s-transform uid=uid-s-transform rv=2" in t for t in texts), texts
    for text in texts:
        assert SECRET_B64 not in text and SECRET_TEXT not in text, text
