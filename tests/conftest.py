"""Suite-wide fixtures: every test must leave no pyinformers thread behind."""

from __future__ import annotations

import threading
import time

import pytest

# The in-process API server fixtures (api_server, kubeconfig, api_client, ...), as users load them.
pytest_plugins = ["pyinformers.testing.pytest_plugin"]

# Threads of the in-process API server serve many tests (a session fixture) and
# keep-alive connections; they are the server's to stop, not a test's leak.
_EXEMPT_PREFIXES = ("pyinformers-apiserver",)


def _ours(thread: threading.Thread) -> bool:
    return thread.name.startswith("pyinformers") and not thread.name.startswith(_EXEMPT_PREFIXES)


@pytest.fixture(autouse=True)
def no_leaked_threads():
    """Fail a test that leaves a pyinformers thread running (after a 5 s grace to exit)."""
    before = set(threading.enumerate())
    yield
    deadline = time.monotonic() + 5.0
    while True:
        leaked = [t for t in threading.enumerate() if t not in before and _ours(t) and t.is_alive()]
        if not leaked:
            return
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            pytest.fail("test left threads running: " + ", ".join(sorted(t.name for t in leaked)))
        leaked[0].join(min(remaining, 0.1))


@pytest.fixture
def informers():
    """A list a test appends its informers to; each must stop within 5 s at the end."""
    made = []
    yield made
    for informer in made:
        assert informer.stop(timeout=5.0), f"{informer!r} did not stop"
