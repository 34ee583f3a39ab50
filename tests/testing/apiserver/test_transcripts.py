"""The embedded API server replays real kube-apiserver transcripts and answers the same.

Every ``*.jsonl`` file under the transcripts directory is replayed against a
fresh :class:`~pyinformers.testing.ApiServer` over real HTTP (see
:mod:`tests.support.transcripts` for the comparison rules). Each step
must match, except for the differences written down in :data:`DIFFERENCES`,
each with its reason (and listed in ``docs/testing.rst``). A documented
difference that no longer occurs fails the test too, so the table only
shrinks with the server's fidelity, never hides a fixed one.

The transcripts are the repository's own, ``tests/transcripts/<version>/``
(recorded by ``python -m tests.support.record_transcripts``; see the README
there); ``PYINFORMERS_TRANSCRIPTS`` points at another directory of them
instead (the documented differences are those of the repository's set).
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

import pytest

from tests.support import transcripts as transcripts

REPO = Path(__file__).resolve().parents[3]


TRANSCRIPTS = REPO / "tests" / "transcripts"


def _transcripts_dir() -> Path | None:
    override = os.environ.get("PYINFORMERS_TRANSCRIPTS")
    if override:
        return Path(override) if Path(override).is_dir() else None
    return TRANSCRIPTS


DIRECTORY = _transcripts_dir()
FILES = transcripts.transcript_files(DIRECTORY) if DIRECTORY else []

#: Documented differences: (file stem, step name pattern) -> (reason, path prefixes).
#: A difference is tolerated when its path starts with one of the prefixes
#: (``"*"``: any difference in that step). Every entry must still occur.
_CONTROLLER = "the deployment controller is not modelled (the revision annotation and status it writes, and the resourceVersions of its writes)"
_DEPLOYMENT_CONTROLLER_PATHS = (
    "body.status",
    "body.metadata.annotations",
    "body.metadata.resourceVersion",
    "body.metadata.generation",
)
DIFFERENCES: dict[tuple[str, str], tuple[str, tuple[str, ...]]] = {
    ("deployment-patches", "*"): (_CONTROLLER, _DEPLOYMENT_CONTROLLER_PATHS),
    ("generation", "deployment-*"): (_CONTROLLER, _DEPLOYMENT_CONTROLLER_PATHS),
    ("discovery", "version*"): (
        "/version names pyinformers.testing, not the recorded build",
        ("body.",),
    ),
    ("discovery", "api"): (
        "no server address is advertised (the server listens on loopback only)",
        ("body.serverAddressByClientCIDRs",),
    ),
    ("discovery", "api-v1"): (
        "Pods' subresources other than status (attach, binding, eviction, exec, log, portforward, proxy, ...) are not served",
        ("body.resources",),
    ),
    ("discovery", "openapi-v3"): (
        "the OpenAPI v3 index lists only the group-versions the embedded server serves",
        ("body.paths",),
    ),
    ("errors", "apiversion-mismatch"): (
        "the recording's scheme name pkg/runtime/scheme.go:111 is an artifact of envtest binaries built "
        "from Go modules with -trimpath; the embedded server keeps the release binaries' "
        "pkg/api/legacyscheme/scheme.go:30",
        ("body.message",),
    ),
    ("crd-validation", "cr-unserved-version"): (
        "a custom resource sent in a version its CRD does not serve gets the 400 without the real server's pruning warning",
        ("warnings",),
    ),
}


def _tolerated(stem: str, step: str, difference: str) -> tuple[str, str] | None:
    """The DIFFERENCES key that documents ``difference``, or None."""
    path = difference.split(":", 1)[0]
    for (file_pattern, step_pattern), (_reason, prefixes) in DIFFERENCES.items():
        if not fnmatch.fnmatchcase(stem, file_pattern) or not fnmatch.fnmatchcase(
            step, step_pattern
        ):
            continue
        if "*" in prefixes or any(path.startswith(p) for p in prefixes):
            return (file_pattern, step_pattern)
    return None


@pytest.mark.parametrize(
    "path",
    FILES
    or [
        pytest.param(
            None,
            marks=pytest.mark.skip(
                reason=f"no transcripts found in {DIRECTORY or os.environ.get('PYINFORMERS_TRANSCRIPTS')}"
            ),
        )
    ],
    ids=[f.stem for f in FILES] or ["no-transcripts"],
)
def test_the_embedded_server_answers_as_the_recorded_kube_apiserver(path, used_differences):
    used_differences.add(("file", path.stem))
    results = transcripts.replay(
        path,
        lenient_rv=lambda step: (
            _tolerated(path.stem, step.name, "body.metadata.resourceVersion: ") is not None
        ),
    )
    unexplained = []
    for result in results:
        for difference in result.differences:
            key = _tolerated(path.stem, result.step.name, difference)
            if key is None:
                unexplained.append(f"{result.step.name}: {difference}")
            else:
                used_differences.add(key)
    assert not unexplained, (
        f"{path.name}: {len(unexplained)} undocumented difference(s):\n" + "\n".join(unexplained)
    )


@pytest.fixture(scope="module")
def used_differences():
    return set()


def test_every_documented_difference_still_occurs_and_is_in_the_docs(used_differences, request):
    if not FILES:
        pytest.skip("no transcripts found")
    # Runs after the replays of this module (pytest keeps file order); needs all of them.
    if {("file", f.stem) for f in FILES} - used_differences:
        pytest.skip("only some transcripts were replayed in this run")
    missing = [
        k
        for k in DIFFERENCES
        if k not in used_differences and any(fnmatch.fnmatchcase(f.stem, k[0]) for f in FILES)
    ]
    assert not missing, (
        f"documented differences that no longer occur (remove them here and in docs/testing.rst): {missing}"
    )
    docs = " ".join((REPO / "docs" / "testing.rst").read_text().split())
    undocumented = sorted(
        {reason for reason, _ in DIFFERENCES.values() if " ".join(reason.split()) not in docs}
    )
    assert not undocumented, f"reasons missing from docs/testing.rst: {undocumented}"
