"""A change to the public surface comes with a changelog entry.

``CHANGELOG.rst`` carries the fingerprint of ``tests/surface/public_api.txt``
on its ``.. public-api-snapshot:`` line. Whoever regenerates the snapshot must
update the line too, and is then in the file where the entry goes.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SNAPSHOT = REPO / "tests" / "surface" / "public_api.txt"
CHANGELOG = REPO / "CHANGELOG.rst"


def fingerprint(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def test_the_changelog_names_the_current_public_surface():
    recorded = re.search(r"^\.\. public-api-snapshot: (\S+)$", CHANGELOG.read_text(), re.M)
    assert recorded, "CHANGELOG.rst has no '.. public-api-snapshot: <fingerprint>' line"
    current = fingerprint(SNAPSHOT.read_text())
    assert recorded.group(1) == current, (
        f"tests/surface/public_api.txt changed: add an entry to CHANGELOG.rst under Unreleased "
        f"and set its line to '.. public-api-snapshot: {current}'"
    )


if __name__ == "__main__":
    print(fingerprint(SNAPSHOT.read_text()))
