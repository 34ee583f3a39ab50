"""What users read imports only public names: docs, samples and the README name no private module.

A private module (``pyinformers.cache._store``) may be renamed or split in any
release; the docs and samples are what users copy, so they must use the
package faces (``from pyinformers.cache import Indexer``).
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PRIVATE = re.compile(r"\bpyinformers(?:\.[A-Za-z]\w*)*\._\w+")


def _user_facing_files() -> list[Path]:
    files = [REPO / "README.rst"]
    for pattern in ("*.rst", "*.py", "*.yaml"):
        files += (REPO / "docs").rglob(pattern)
        files += (REPO / "samples").rglob(pattern)
    return sorted(f for f in files if "_build" not in f.parts)


def test_docs_samples_and_the_readme_name_no_private_module():
    found = []
    for path in _user_facing_files():
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for match in PRIVATE.finditer(line):
                found.append(f"{path.relative_to(REPO)}:{number}: {match.group(0)}")
    assert not found, "private modules named where users read:\n" + "\n".join(found)
