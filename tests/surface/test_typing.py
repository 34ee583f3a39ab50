"""Users' type checkers see the real types of the public names: mypy checks a user's snippet.

It runs with the project's mypy configuration and cache (``make typecheck``
warms it first), so it costs a few seconds, not a cold analysis.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("mypy")

ROOT = Path(__file__).resolve().parents[2]

SNIPPET = """
from pyinformers import Controller, ReflectorOptions, Result, SharedInformerFactory

Result(requeue_afterr=5)
ReflectorOptions(pag_size=10)
SharedInformerFactory(resync_periood=30)


class C(Controller):
    def __init__(self) -> None:
        super().__init__(rate_limiter="fast")
        self.watch("an informer")
"""


@pytest.fixture(scope="module")
def mypy_output(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("typing") / "user_code.py"
    path.write_text(textwrap.dedent(SNIPPET))
    result = subprocess.run(
        [sys.executable, "-m", "mypy", str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    return result.stdout


def test_a_misspelt_keyword_through_the_top_level_package_is_a_type_error(mypy_output):
    for name, cls in (
        ("requeue_afterr", "Result"),
        ("pag_size", "ReflectorOptions"),
        ("resync_periood", "SharedInformerFactory"),
    ):
        assert f'Unexpected keyword argument "{name}" for "{cls}"' in mypy_output, mypy_output


def test_the_public_seams_take_protocols(mypy_output):
    assert 'incompatible type "str"; expected "RateLimiter | None"' in mypy_output, mypy_output
    assert 'incompatible type "str"; expected "Watchable"' in mypy_output, mypy_output
