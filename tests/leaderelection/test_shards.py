"""Sharding keys over replicas: real Leases on the embedded server, a fake clock, simulated workers.

Each replica is a ShardCoordinator stepped by hand plus a simulated worker
pool that keeps trying to reconcile keys (through ``enter``/``exit``, as the
Controller's admission does) and takes a fake-time while doing so. Every
reconcile is recorded as an interval ``(key, replica, start, end)``; the
tests check that no two replicas' intervals on one key ever overlap, across
joins, clean leaves and frozen replicas, and that the keys spread evenly.
"""

from __future__ import annotations

import heapq
import random
from collections import Counter, defaultdict

from pyinformers.clock import FakeClock
from pyinformers.leaderelection import ElectionTiming
from pyinformers.leaderelection._rendezvous import assign, shard_of
from pyinformers.leaderelection._shards import ShardCoordinator

NS = "default"
KEYS = [f"default/item-{i:04d}" for i in range(1000)]
INF = float("inf")


def test_rendezvous_assignment_is_balanced_stable_and_moves_little():
    members = ["a", "b", "c"]
    owner = assign(24, members)
    assert sorted(Counter(owner.values()).values()) == [8, 8, 8]
    assert owner == assign(24, list(reversed(members)))  # order does not matter
    joined = assign(24, members + ["d"])
    moved = sum(1 for s in range(24) if owner[s] != joined[s])
    assert sorted(Counter(joined.values()).values()) == [6, 6, 6, 6]
    assert moved <= 8  # the minimum is 6 (d's share); rendezvous stays close to it
    left = assign(24, ["a", "b"])
    assert all(
        left[s] == owner[s] for s in range(24) if owner[s] in ("a", "b") and left[s] == owner[s]
    )
    assert sum(1 for s in range(24) if owner[s] != left[s]) <= 12
    assert [shard_of(k, 24) for k in KEYS[:5]] == [shard_of(k, 24) for k in KEYS[:5]]


class Fleet:
    """Replicas over one shard group, their simulated workers, and the interval log."""

    def __init__(self, api_client, *, shards=24, timing=None, reconcile_time=(0.05, 4.0), seed=1):
        self.api_client = api_client
        self.clock = FakeClock()
        self.timing = timing or ElectionTiming()
        self.shards = shards
        self.reconcile_time = reconcile_time
        self.rng = random.Random(seed)
        self.replicas: dict[str, ShardCoordinator] = {}
        self.due: dict[str, float] = {}
        self.frozen: set[str] = set()  # coordinators that stopped stepping (workers go on)
        self.gone: set[str] = set()  # replicas whose workers stopped too
        self.inflight: dict[str, dict[str, float]] = defaultdict(dict)  # replica -> key -> start
        self.ends: list = []  # heap of (end time, replica, key)
        self.intervals: list[tuple[str, str, float, float]] = []
        self.gained_keys: Counter = Counter()
        self.cursor: Counter = Counter()
        self.reconciled: dict[str, set] = defaultdict(set)  # key -> replicas since the last reset

    def join(self, name, shards=None):
        def gained(shards, name=name):
            self.gained_keys[name] += sum(1 for k in KEYS if shard_of(k, self.shards) in shards)

        coordinator = ShardCoordinator(
            self.api_client,
            group="items",
            namespace=NS,
            identity=name,
            shards=shards or self.shards,
            timing=self.timing,
            clock=self.clock,
            on_gained=gained,
            rng=random.Random(hash(name) & 0xFFFF),
        )
        self.replicas[name] = coordinator
        self.due[name] = self.clock.now()
        return coordinator

    def leave(self, name):
        """A clean shutdown: drain (the simulation finishes in-flight work first), release."""
        self._finish(self.replicas[name], name, until=INF)
        assert self.replicas[name].leave(drain_timeout=5)
        self.gone.add(name)

    def _finish(self, coordinator, name, until):
        keep = []
        while self.ends:
            end, who, key = heapq.heappop(self.ends)
            if who == name and end <= until or (who == name and until == INF):
                self._end(who, key, min(end, self.clock.now()) if until == INF else end)
            else:
                keep.append((end, who, key))
        for item in keep:
            heapq.heappush(self.ends, item)

    def _end(self, name, key, end):
        start = self.inflight[name].pop(key)
        self.intervals.append((key, name, start, end))
        self.replicas[name].exit(key)

    def _work(self, now):
        while self.ends and self.ends[0][0] <= now:
            end, name, key = heapq.heappop(self.ends)
            self._end(name, key, end)
        for name, coordinator in self.replicas.items():
            if name in self.gone:
                continue
            cursor = self.cursor[name]
            for i in range(cursor, cursor + 150):  # the keys its workers take from the queue now
                key = KEYS[i % len(KEYS)]
                if key in self.inflight[name] or not coordinator.enter(key):
                    continue
                self.inflight[name][key] = now
                self.reconciled[key].add(name)
                heapq.heappush(self.ends, (now + self.rng.uniform(*self.reconcile_time), name, key))
            self.cursor[name] = (cursor + 150) % len(KEYS)

    def run_for(self, seconds, tick=0.25):
        end = self.clock.now() + seconds
        while self.clock.now() < end:
            now = self.clock.now()
            for name, coordinator in list(self.replicas.items()):
                if name in self.frozen or name in self.gone or self.due[name] > now:
                    continue
                delay = coordinator.step()
                self.due[name] = INF if delay is None else now + delay
            self._work(now)
            self.clock.set(min(end, now + tick))

    def owners(self):
        """key -> replicas that would admit it now."""
        result = defaultdict(set)
        for name, coordinator in self.replicas.items():
            if name in self.gone or not coordinator.is_member():
                continue
            for shard in coordinator.held():
                result[shard].add(name)
        return {k: result.get(shard_of(k, self.shards), set()) for k in KEYS}

    def overlaps(self):
        by_key = defaultdict(list)
        for key, name, start, end in self.intervals:
            by_key[key].append((start, end, name))
        for name, running in self.inflight.items():
            for key, start in running.items():
                by_key[key].append((start, INF, name))
        found = []
        for key, spans in by_key.items():
            spans.sort()
            for (s1, e1, n1), (s2, e2, n2) in zip(spans, spans[1:]):
                if n1 != n2 and s2 < e1:
                    found.append((key, n1, (s1, e1), n2, (s2, e2)))
        return found

    def converged(self, members):
        """Every shard held by exactly the member the assignment over ``members`` names."""
        target = assign(self.shards, members)
        owners = self.owners()
        return all(o == {target[shard_of(k, self.shards)]} for k, o in owners.items())

    def run_until_converged(self, members, limit=120.0):
        start = self.clock.now()
        while not self.converged(members):
            assert self.clock.now() - start < limit, "did not converge"
            self.run_for(0.5)
        return self.clock.now() - start

    def spread(self):
        return Counter(next(iter(o)) for o in self.owners().values() if o)


def test_three_replicas_split_a_thousand_keys_evenly_and_each_key_has_one_owner(api_client):
    fleet = Fleet(api_client)
    for name in ("r1", "r2", "r3"):
        fleet.join(name)
    fleet.run_until_converged(["r1", "r2", "r3"])
    fleet.run_for(10)
    spread = fleet.spread()
    assert sum(spread.values()) == 1000 and set(spread) == {"r1", "r2", "r3"}
    assert all(abs(count - 1000 / 3) <= 0.2 * 1000 / 3 for count in spread.values()), spread
    fleet.reconciled.clear()
    fleet.run_for(20)
    assert all(
        len(names) == 1 for names in fleet.reconciled.values()
    )  # steady state: one replica per key
    assert len(fleet.reconciled) == 1000
    assert fleet.overlaps() == []


def test_a_replica_joining_and_leaving_cleanly_rebalances_without_overlap(api_client):
    fleet = Fleet(api_client)
    for name in ("r1", "r2", "r3"):
        fleet.join(name)
    fleet.run_until_converged(["r1", "r2", "r3"])
    before = fleet.owners()
    fleet.join("r4")
    joined_in = fleet.run_until_converged(["r1", "r2", "r3", "r4"])
    after_join = fleet.spread()
    assert set(after_join) == {"r1", "r2", "r3", "r4"}
    assert fleet.gained_keys["r4"] == after_join["r4"]
    moved = sum(1 for k, o in fleet.owners().items() if o != before[k])
    assert joined_in <= 3 * fleet.timing.retry_period * 2.2 + 2
    fleet.leave("r2")
    left_in = fleet.run_until_converged(["r1", "r3", "r4"])
    assert set(fleet.spread()) == {"r1", "r3", "r4"}
    assert left_in <= 2 * fleet.timing.retry_period * 2.2 + 2  # released: no lease to wait out
    fleet.run_for(10)
    assert fleet.overlaps() == []
    assert moved <= 1000 * 0.4


def test_a_frozen_replica_is_replaced_after_its_lease_without_overlap(api_client):
    fleet = Fleet(api_client)
    for name in ("r1", "r2", "r3"):
        fleet.join(name)
    fleet.run_until_converged(["r1", "r2", "r3"])
    fleet.frozen.add("r2")  # its renewals stop; its workers keep trying (and are refused in time)
    frozen_at = fleet.clock.now()
    took = fleet.run_until_converged(["r1", "r3"], limit=120)
    spread = fleet.spread()
    assert set(spread) == {"r1", "r3"} and sum(spread.values()) == 1000
    assert (
        fleet.timing.lease_duration
        <= took
        <= fleet.timing.lease_duration + 3 * fleet.timing.retry_period * 1.2 + 2
    )
    assert not fleet.replicas["r2"].is_member()
    fleet.run_for(10)
    assert fleet.overlaps() == []
    assert fleet.clock.now() > frozen_at


def test_the_interval_check_catches_reconciles_longer_than_the_safety_margin(api_client):
    """The documented limit, shown: reconciles outliving lease_duration - renew_deadline can overlap."""
    fleet = Fleet(api_client, reconcile_time=(10.0, 12.0))
    for name in ("r1", "r2"):
        fleet.join(name)
    fleet.run_until_converged(["r1", "r2"])
    fleet.run_for(3)
    fleet.frozen.add("r2")
    fleet.run_for(40)
    assert fleet.overlaps() != []


def test_member_leases_of_departed_replicas_are_deleted_once_no_shard_names_them(api_client):
    from pyinformers.api._client import ResourceClient
    from pyinformers.leaderelection._shards import member_lease_name
    from pyinformers.resources import LEASES

    fleet = Fleet(api_client)
    for name in ("r1", "r2", "r3"):
        fleet.join(name)
    fleet.run_until_converged(["r1", "r2", "r3"])
    fleet.leave("r2")  # released member Lease
    fleet.frozen.add("r3")  # expired member Lease
    fleet.run_until_converged(["r1"], limit=120)
    leases = ResourceClient(api_client, LEASES)
    names = {lease["metadata"]["name"] for lease in leases.list_all(NS).items}
    assert member_lease_name("items", "r2") in names
    fleet.run_for(ShardCoordinator.GC_AFTER * fleet.timing.lease_duration + 10)
    names = {lease["metadata"]["name"] for lease in leases.list_all(NS).items}
    assert (
        member_lease_name("items", "r2") not in names
        and member_lease_name("items", "r3") not in names
    )
    assert member_lease_name("items", "r1") in names
    assert sum(1 for n in names if "-shard-" in n) == fleet.shards


def test_replicas_with_another_shard_count_make_everyone_hold_nothing_until_one_count_is_left(
    api_client,
):
    fleet = Fleet(api_client)
    for name in ("r1", "r2"):
        fleet.join(name)
    fleet.run_until_converged(["r1", "r2"])
    fleet.join("new", shards=32)  # a rollout that changed the shard count
    fleet.run_for(10)
    assert all(not coordinator.held() for coordinator in fleet.replicas.values())
    assert fleet.replicas["r1"].mismatched == ["new"] and fleet.replicas["new"].mismatched == [
        "r1",
        "r2",
    ]
    for name in ("r1", "r2"):
        fleet.leave(name)
    fleet.run_for(10)
    assert fleet.replicas["new"].held() == set(range(32))
    assert fleet.overlaps() == []


class _SlowLock:
    """A shard's LeaseLock behind a slow API server: each call takes ``cost`` seconds of fake time."""

    def __init__(self, lock, clock, cost):
        self.lock, self.clock, self.cost = lock, clock, cost

    def __getattr__(self, name):
        method = getattr(self.lock, name)
        if name not in ("get", "create", "update"):
            return method

        def slow(*args, **kwargs):
            self.clock.step(self.cost)
            return method(*args, **kwargs)

        return slow


def test_a_step_bounds_its_shard_writes_so_the_membership_is_renewed_in_time(api_client):
    clock = FakeClock()
    timing = ElectionTiming(lease_duration=15, renew_deadline=10, retry_period=2)
    coordinator = ShardCoordinator(
        api_client, group="slow", namespace=NS, identity="a", shards=24, timing=timing, clock=clock
    )
    # Taking a free shard is a read and a create: 1.2 s of 24 shards' 28.8 s, thrice the deadline.
    coordinator._shard_locks = {
        s: _SlowLock(lock, clock, 0.6) for s, lock in coordinator._shard_locks.items()
    }
    steps = []
    while len(coordinator.held()) < 24 and len(steps) < 100:
        began = clock.now()
        delay = coordinator.step()
        assert delay is not None and coordinator.is_member()  # never lapsed
        steps.append(clock.now() - began)
        clock.step(delay)
    assert coordinator.held() == set(range(24))
    assert max(steps) <= timing.renew_deadline / 3 + 1.2  # the budget, plus the write under way
    assert len(steps) > 3  # the work was spread over several steps, each renewing first
