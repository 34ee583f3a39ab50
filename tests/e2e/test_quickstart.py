"""docs/quickstart.rst works as written: the greeter's demo heals (its test runs from docs/quickstart too)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

GREETER = Path(__file__).resolve().parents[2] / "docs" / "quickstart" / "greeter.py"


def test_the_greeter_demo_creates_and_heals_as_the_quickstart_says():
    result = subprocess.run(
        [sys.executable, str(GREETER), "--demo"], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "created:  {'message': 'Hello, world'}",
        "healed:   {'message': 'Hello, world'}",
    ]
    # No logging configured: the Manager says one line when running and one when stopped.
    assert [line.split(" ")[1] for line in result.stderr.splitlines()] == ["running", "stopped"], (
        result.stderr
    )
