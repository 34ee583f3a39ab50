"""Suite-wide fixtures: every test must leave no pyinformers thread behind."""

from __future__ import annotations

import threading
import time

import pytest
from hypothesis import HealthCheck, settings

from pyinformers.clock import REAL_CLOCK

# Hypothesis judges each example against a wall-clock deadline (200 ms by default) and
# fails a test whose example ran slow once and fast on replay as "flaky". On a loaded
# 2-core CI machine a GC pass or a descheduled thread does that, and says nothing about
# the code: the suite's properties are about behaviour, its speed is for benchmarks/.
settings.register_profile(
    "pyinformers", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("pyinformers")

# The in-process API server fixtures (api_server, kubeconfig, api_client, ...), as users load them.
pytest_plugins = ["pyinformers.testing.pytest_plugin"]

# Threads of the in-process API server serve many tests (a session fixture) and
# keep-alive connections; they are the server's to stop, not a test's leak. The
# real clock's one timer thread serves the whole process and ends on its own when
# idle: what a test must not leave behind are its pending timers (checked below).
_EXEMPT_PREFIXES = ("pyinformers-apiserver", "pyinformers-clock-timers")


def _ours(thread: threading.Thread) -> bool:
    return thread.name.startswith("pyinformers") and not thread.name.startswith(_EXEMPT_PREFIXES)


@pytest.fixture(autouse=True)
def no_leaked_threads():
    """Fail a test that leaves a pyinformers thread or real-clock timer running (after a 5 s grace)."""
    before = set(threading.enumerate())
    timers_before = REAL_CLOCK.timer_count()
    yield
    deadline = time.monotonic() + 5.0
    while True:
        leaked = [t for t in threading.enumerate() if t not in before and _ours(t) and t.is_alive()]
        timers = REAL_CLOCK.timer_count() - timers_before
        if not leaked and timers <= 0:
            return
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            names = sorted(t.name for t in leaked) + (
                [f"{timers} real-clock timer(s)"] if timers > 0 else []
            )
            pytest.fail("test left threads running: " + ", ".join(names))
        if leaked:
            leaked[0].join(min(remaining, 0.1))
        else:
            time.sleep(min(remaining, 0.01))  # timers are cancelled by threads still stopping


@pytest.fixture
def informers():
    """A list a test appends its informers to; each must stop within 5 s at the end."""
    made = []
    yield made
    for informer in made:
        assert informer.stop(timeout=5.0), f"{informer!r} did not stop"
