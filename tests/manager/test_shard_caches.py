"""Shard-aware caches: each sharded Manager caches only the objects of the shards it holds.

Two or three Managers in one process over the embedded server (and a real
kube-apiserver with ``--k8s-server=real``): unlabelled primaries are labelled
once by their shard's holder, children carry their owner's label from
creation, a removed or edited label is restored without the key being taken
for deleted, a join re-lists only the moved shards, and no key is ever
reconciled by two replicas at once.
"""

from __future__ import annotations

import threading

import pytest

from pyinformers.api import AlreadyExists
from pyinformers.api._client import ResourceClient
from pyinformers.api.meta import SHARD_LABEL, set_controller_reference
from pyinformers.cache._sharded import ShardedInformer
from pyinformers.controller import Controller, EnqueueForOwner
from pyinformers.leaderelection import assign, shard_of
from pyinformers.resources import CONFIGMAPS, SECRETS
from pyinformers.testing import eventually
from tests.manager.test_sharding import Log
from tests.manager.test_sharding import make as sharded_manager

pytestmark = pytest.mark.timeout(240)

COUNT = 120
SHARDS = 12
WAIT = 90.0


class Mirror(Controller):
    """Each ConfigMap gets a Secret child of the same name; records reads of a primary that is absent."""

    def __init__(self, manager, identity, log):
        super().__init__("mirror", metrics_registry=manager.registry, workers=3)
        self.identity, self.log_ = identity, log
        factory = manager.factory
        self.configmaps = factory.lister(CONFIGMAPS)
        self.secrets = factory.lister(SECRETS)
        self.secret_client = factory.client(SECRETS, verbs=("create",))
        self.watch(factory.informer(CONFIGMAPS))
        self.watch(factory.informer(SECRETS), EnqueueForOwner(CONFIGMAPS))
        self.absent: list[str] = []  # keys reconciled as gone
        self.lock = threading.Lock()

    def reconcile(self, key):
        self.log_.begin(self.identity, key)
        try:
            namespace, name = key.split("/")
            cm = self.configmaps.get(name, namespace=namespace)
            if cm is None:
                with self.lock:
                    self.absent.append(key)
                return None
            if self.secrets.get(name, namespace=namespace) is None:
                secret = {"metadata": {"name": name, "namespace": namespace}}
                set_controller_reference(cm, secret)
                try:
                    self.secret_client.create(secret)
                except AlreadyExists:
                    pass
            return None
        finally:
            self.log_.end(self.identity, key)


def make(cluster, identity, log, namespace):
    return sharded_manager(
        cluster, identity, log, namespace, Mirror, "mirror", shards=SHARDS, shard_caches=True
    )


def labels_of(client, namespace):
    return {
        o["metadata"]["name"]: (o["metadata"].get("labels") or {}).get(SHARD_LABEL)
        for o in client.list_all(namespace).items
    }


def right_shard(namespace, name):
    return str(shard_of(f"{namespace}/{name}", SHARDS))


def settled(managers, members, namespace, cms, secrets):
    """Every member holds its assigned shards, caches exactly their objects, and all objects are labelled.

    The ConfigMaps are the server's (a real control plane adds ``kube-root-ca.crt`` to each namespace).
    """
    target = assign(SHARDS, members)
    cm_labels, secret_labels = labels_of(cms, namespace), labels_of(secrets, namespace)
    for name in members:
        manager = managers[name]
        want = {s for s, m in target.items() if m == name}
        if manager.shards is None or manager.shards.held() != want:
            return False
        if set(manager.shard_caches.ready) != want:
            return False
        cached = {o["metadata"]["name"] for o in manager.factory.lister(CONFIGMAPS).list()}
        if cached != {cm for cm in cm_labels if int(right_shard(namespace, cm)) in want}:
            return False
    return all(
        cm_labels[cm] == right_shard(namespace, cm)
        and secret_labels.get(cm) == right_shard(namespace, cm)
        for cm in cm_labels
    )


def test_sharded_managers_cache_only_their_shards_and_keep_the_labels(k8s):
    ns = k8s.namespace
    api = k8s.api_client()
    cms, secrets = ResourceClient(api, CONFIGMAPS), ResourceClient(api, SECRETS)
    for i in range(COUNT):
        cms.create({"metadata": {"name": f"cm-{i:03d}", "namespace": ns}})
    log = Log()
    managers = {}
    try:
        for name in ("r1", "r2"):
            managers[name] = make(k8s, name, log, ns)
            managers[name].start()
        for manager in managers.values():
            informer = manager.factory.informer(CONFIGMAPS)
            assert isinstance(informer, ShardedInformer) and not informer.whole
            assert not manager.factory.informer(SECRETS).whole  # children follow their owners
        eventually(
            lambda: settled(managers, ["r1", "r2"], ns, cms, secrets), timeout=WAIT, what="r1, r2"
        )
        labelled = sum(m.shard_caches.labelled for m in managers.values())
        primaries = len(cms.list_all(ns).items)  # COUNT, plus kube-root-ca.crt on a real server
        assert labelled == primaries  # one write per primary, once; children were born labelled

        # Someone removes one label and edits another: both are restored, neither key taken for gone.
        removed, edited = "cm-007", "cm-011"
        cms.patch(removed, {"metadata": {"labels": {SHARD_LABEL: None}}}, ns)
        wrong = str((int(right_shard(ns, edited)) + 1) % SHARDS)
        cms.patch(edited, {"metadata": {"labels": {SHARD_LABEL: wrong}}}, ns)
        eventually(
            lambda: (
                labels_of(cms, ns)[removed] == right_shard(ns, removed)
                and labels_of(cms, ns)[edited] == right_shard(ns, edited)
            ),
            timeout=WAIT,
            what="restored labels",
        )
        eventually(
            lambda: settled(managers, ["r1", "r2"], ns, cms, secrets), timeout=WAIT, what="again"
        )
        assert sum(m.shard_caches.labelled for m in managers.values()) >= primaries + 2
        assert sum(m.shard_caches.restored for m in managers.values()) >= 1  # the edited one
        # Neither label change was taken for a deletion. The removed label is always checked against
        # the server; the edited one when it left its shard's cache before its restore landed, and
        # again when the restore took it out of the wrong shard's cache before it was back in its own.
        assert sum(m.shard_caches.deletions for m in managers.values()) == 0
        assert 1 <= sum(m.shard_caches.drifts for m in managers.values()) <= 3
        assert [m.controllers[0].absent for m in managers.values()] == [[]] * len(managers)
        # A real deletion is one: the key is reconciled as gone once the server confirms it.
        cms.delete("cm-000", ns)
        eventually(
            lambda: any(f"{ns}/cm-000" in m.controllers[0].absent for m in managers.values()),
            timeout=WAIT,
            what="the deleted key reconciled as gone",
        )
        for manager in managers.values():
            absent = set(manager.controllers[0].absent)
            assert absent <= {f"{ns}/cm-000"}, absent
        cms.create({"metadata": {"name": "cm-000", "namespace": ns}})

        # A join: the newcomer lists only its shards; the others drop the ones they gave away.
        before = {n: m.factory.informer(CONFIGMAPS).moves for n, m in managers.items()}
        managers["r3"] = make(k8s, "r3", log, ns)
        managers["r3"].start()
        eventually(
            lambda: settled(managers, ["r1", "r2", "r3"], ns, cms, secrets),
            timeout=WAIT,
            what="r1, r2, r3",
        )
        moved = sum(
            m.factory.informer(CONFIGMAPS).moves - before[n]
            for n, m in managers.items()
            if n in before
        )
        target = assign(SHARDS, ["r1", "r2", "r3"])
        assert moved == sum(1 for m in target.values() if m == "r3")  # only the moved shards

        assert managers["r2"].stop(timeout=10)  # a clean leave
        eventually(
            lambda: settled(managers, ["r1", "r3"], ns, cms, secrets), timeout=WAIT, what="r1, r3"
        )
        assert log.overlaps() == []
    finally:
        for manager in managers.values():
            manager.stop(timeout=5)
    assert log.overlaps() == []


class _RecordingShards:
    """Stands in for a kind's ShardedInformer: records every set of shards it is told to cache."""

    def __init__(self):
        self.calls = []
        self.unlabelled = self  # the kind's metadata-only informer: nothing unlabelled
        self.indexer = self

    def set_shards(self, shards):
        self.calls.append(set(shards))

    def shard_synced(self, shard):
        return True

    def list(self):
        return []


def test_a_shard_held_only_in_passing_is_never_listed():
    from pyinformers.clock import FakeClock
    from pyinformers.manager._shard_caches import ShardCaches, _Kind, _own_key

    clock = FakeClock()
    caches = ShardCaches(None, 4, settle=4.0, clock=clock)
    informer = _RecordingShards()
    kind = _Kind(caches, informer, _own_key)
    kind.unlabelled = informer
    caches.kinds.append(kind)
    try:
        caches.follow({0, 1})  # a cold start: this replica holds two shards for a moment
        assert informer.calls[-1] == set()  # neither is listed yet
        assert caches.pending_shards() == [0, 1]  # held, not cached: their keys wait
        clock.step(2.0)
        caches.follow({0})  # shard 1 went to another replica within the settle time
        assert clock.timer_count() == 1  # one look again, not one per step
        clock.step(1.9)
        assert informer.calls[-1] == set()  # shard 0 has been held 3.9 s
        clock.step(0.1)
        assert informer.calls[-1] == {0}  # 4 s: settled, listed
        eventually(lambda: caches.pending_shards() == [], timeout=10, what="shard 0 ready")
        assert all(1 not in call for call in informer.calls)
        keys = {shard_of(f"ns/k{i}", 4): f"ns/k{i}" for i in range(40)}
        assert caches.admit(keys[0], None) and not caches.admit(keys[1], None)
        caches.follow({0, 2})  # a later gain waits its settle time too; a held shard stays
        assert informer.calls[-1] == {0}
        clock.step(3.5)
        caches.follow({0, 2})  # the coordinator's next step: the gain keeps its first time
        assert informer.calls[-1] == {0}
        clock.step(0.5)
        assert informer.calls[-1] == {0, 2}
        assert clock.timer_count() == 0  # nothing unsettled, nothing pending
    finally:
        caches.stop()
