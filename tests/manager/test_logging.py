"""Logs: structured lines carry controller, key and reconcile id; an unconfigured Manager says one line at start and stop."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
import textwrap
import threading
from contextlib import contextmanager

import pytest

from pyinformers.controller._logcontext import enter, leave, reconcile_fields
from pyinformers.manager._operator import configure_logging


@contextmanager
def reconciling(controller: str, key: str):
    """What a Controller's worker does around each reconcile: enter, then leave the log context."""
    token = enter(controller, key)
    try:
        yield reconcile_fields()
    finally:
        leave(token)


@pytest.fixture
def captured():
    stream = io.StringIO()
    handlers = {}

    def start(fmt):
        handlers["h"] = configure_logging("info", fmt, stream)
        return stream

    yield start
    if "h" in handlers:
        logging.getLogger().removeHandler(handlers["h"])


def test_json_lines_of_a_reconcile_carry_its_controller_key_and_id(captured):
    stream = captured("json")
    with reconciling("greeter", "default/hello") as fields:
        logging.getLogger("user.code").info("made it")
    logging.getLogger("user.code").info("outside")
    inside, outside = (json.loads(line) for line in stream.getvalue().splitlines())
    assert inside["controller"] == "greeter" and inside["key"] == "default/hello"
    assert inside["reconcile_id"] == fields["reconcile_id"] and inside["msg"] == "made it"
    assert "controller" not in outside and reconcile_fields() == {}


def test_key_value_lines_quote_what_needs_quoting(captured):
    stream = captured("kv")
    with reconciling("greeter", "default/hello"):
        logging.getLogger("user.code").warning('said "hi" = twice')
    line = stream.getvalue().strip()
    assert (
        "level=warning logger=user.code" in line and "controller=greeter key=default/hello" in line
    )
    assert 'msg="said \\"hi\\" = twice"' in line and "reconcile_id=greeter-" in line


def test_two_workers_never_see_each_others_fields():
    seen = {}
    barrier = threading.Barrier(2)

    def work(key):
        with reconciling("c", key):
            barrier.wait(5)
            seen[key] = reconcile_fields()["key"]

    threads = [threading.Thread(target=work, args=(k,), name=f"test-{k}") for k in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert seen == {"a": "a", "b": "b"}


def test_an_unconfigured_manager_prints_one_line_at_start_and_one_at_stop():
    program = textwrap.dedent("""
        import threading
        from pyinformers import Manager
        from pyinformers.testing import ApiServer

        with ApiServer() as server:
            manager = Manager(api_client=server.api_client(), metrics_port=0, health_port=0)
            threading.Timer(0.5, manager.stop).start()
            manager.run()
    """)
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 2, lines
    assert (
        lines[0].startswith("pyinformers: running 0 controller(s)")
        and lines[1] == "pyinformers: stopped"
    )
