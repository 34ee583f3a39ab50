"""Every Python block in the docs runs in the test suite.

Whole programs and tests live in files (``docs/quickstart/``,
``docs/examples/``, ``samples/``) that are ``literalinclude``'d and run as
tests of their own; this file checks that each included ``.py`` file is a
test the suite collects or a module one of its tests imports. Everything written
inline in ``docs/*.rst`` and ``README.rst`` runs here, a page at a time, like a
notebook: the page's Python blocks execute in order in one namespace, so a
later snippet uses what an earlier one defined. A page may add context the
reader does not need to see, with ``sphinx.ext.doctest``'s hidden directives:

``.. testsetup::``
    runs first (e.g. the objects a snippet reads);
``.. testcode::`` with ``:hide:``
    runs where it stands (e.g. a check that the snippet above did its job);
``.. testcleanup::``
    runs last, whatever happened (stop what the page started).

Blocks in doctest form (``>>>``) have their output compared. Every page starts
in the same small world: a fresh embedded API server (``server``), an
``api_client`` for it, and a ``~/.kube/config`` (``$HOME`` is a temporary
directory, ``$KUBECONFIG`` points there too), so ``Manager()`` and
``SharedInformerFactory(kubeconfig=...)`` find it as they would a cluster.

A block that cannot run here (it blocks until a signal, needs the real
control-plane binaries) is preceded by an rst comment giving the reason::

    .. untested: runs until SIGTERM, binding ports 8080 and 8081

The comment is invisible in the built docs; this file checks that it has a
reason and that there are few of them. A Python block with neither is run: a
new snippet cannot slip in unexecuted.
"""

from __future__ import annotations

import ast
import contextlib
import doctest
import io
import re
import textwrap
import threading
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pyinformers.api import ResourceClient
from pyinformers.resources import CONFIGMAPS
from pyinformers.testing import ApiServer, eventually

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs").glob("*.rst")) + [ROOT / "README.rst"]

#: At most this many blocks may be marked ``.. untested:``; keep it small.
MAX_UNTESTED = 6

_PYTHON_DIRECTIVE = re.compile(
    r"^(\s*)\.\. (?:code-block|code|sourcecode)::(?: (?:python3?|py|pycon))?\s*$"
)
_INCLUDE = re.compile(r"^\s*\.\. literalinclude:: (\S+\.py)\s*$")
_OTHER_DIRECTIVE = re.compile(r"^(\s*)\.\. (?:code-block|code|sourcecode)::")
_HIDDEN_DIRECTIVE = re.compile(r"^(\s*)\.\. (testsetup|testcode|testcleanup|doctest)::")
_UNTESTED = re.compile(r"^\s*\.\. untested:(.*)$")
_LITERAL = re.compile(r"::\s*$")


@dataclass
class Block:
    """A Python block of a page: where it starts (1-based line of its first code line) and its role."""

    page: Path
    line: int
    code: str
    role: str = "code"  # "setup", "code" (visible or hidden testcode), "cleanup"
    untested: str | None = None

    @property
    def where(self) -> str:
        return f"{self.page.name}:{self.line}"

    @property
    def is_doctest(self) -> bool:
        return self.code.lstrip().startswith(">>>")


def _body(lines: list[str], start: int, indent: int) -> tuple[str, int, int]:
    """The block indented deeper than ``indent`` after line ``start``.

    Returns the dedented code, the index of its first line, and the index of
    the line after it. Directive options (``:hide:``) are skipped.
    """
    i = start + 1
    while i < len(lines) and not lines[i].strip():
        i += 1
    while i < len(lines) and lines[i].strip().startswith(":") and _indent(lines[i]) > indent:
        i += 1
    first = i
    end = i
    while i < len(lines):
        if lines[i].strip():
            if _indent(lines[i]) <= indent:
                break
            end = i + 1
        i += 1
    while first < end and not lines[first].strip():
        first += 1
    return textwrap.dedent("\n".join(lines[first:end])) + "\n", first, end


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def looks_like_python(code: str) -> bool:
    """A bare ``::`` literal block is Python if it parses as more than annotations (``key: value`` output, YAML)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return False
    return any(not (isinstance(node, ast.AnnAssign) and node.value is None) for node in tree.body)


def scan(page: Path, text: str | None = None) -> list[Block]:
    """Every Python block of a page, in order, with its role and any ``untested`` reason."""
    lines = (page.read_text() if text is None else text).splitlines()
    blocks: list[Block] = []
    pending: tuple[int, str] | None = None  # an ``untested`` comment waiting for its block
    i = 0
    while i < len(lines):
        line = lines[i]
        block: Block | None = None
        end = i + 1
        untested = _UNTESTED.match(line)
        python = _PYTHON_DIRECTIVE.match(line)
        hidden = _HIDDEN_DIRECTIVE.match(line)
        if untested:
            if pending:
                raise AssertionError(
                    f"{page.name}:{pending[0] + 1}: an 'untested' comment with no block after it"
                )
            pending = (i, untested.group(1).strip())
        elif python or hidden:
            code, first, end = _body(lines, i, _indent(line))
            role = (
                {"testsetup": "setup", "testcleanup": "cleanup"}.get(hidden.group(2), "code")
                if hidden
                else "code"
            )
            block = Block(page, first + 1, code, role)
        elif _OTHER_DIRECTIVE.match(line):
            _, _, end = _body(lines, i, _indent(line))  # another language: not ours to run
        elif _LITERAL.search(line) and not line.lstrip().startswith(".."):
            code, first, end = _body(lines, i, _indent(line))
            if looks_like_python(code):
                block = Block(page, first + 1, code)
        elif line.lstrip().startswith(">>> ") and (i == 0 or not lines[i - 1].strip()):
            end = i
            while end < len(lines) and lines[end].strip():
                end += 1
            block = Block(page, i + 1, textwrap.dedent("\n".join(lines[i:end])) + "\n")
        elif pending and line.strip():
            raise AssertionError(
                f"{page.name}:{pending[0] + 1}: an 'untested' comment must come right before its block"
            )
        if block is not None:
            if pending:
                block.untested, pending = pending[1], None
            blocks.append(block)
        i = max(end, i + 1)
    if pending:
        raise AssertionError(
            f"{page.name}:{pending[0] + 1}: an 'untested' comment with no block after it"
        )
    return blocks


BLOCKS = {page.name: scan(page) for page in PAGES}
ALL = [block for blocks in BLOCKS.values() for block in blocks]
RUN_PAGES = [name for name, blocks in BLOCKS.items() if any(b.untested is None for b in blocks)]


def run_block(block: Block, namespace: dict) -> None:
    """Execute one block in the page's namespace; a failure names the page and line."""
    if block.untested is not None:
        return
    if block.is_doctest:
        parser = doctest.DocTestParser()
        test = parser.get_doctest(
            block.code, namespace, block.where, str(block.page), block.line - 1
        )
        test.globs = namespace  # not the copy DocTest makes: later blocks see what this one defined
        flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
        runner = doctest.DocTestRunner(optionflags=flags)
        report: list[str] = []
        runner.run(test, out=report.append, clear_globs=False)
        if runner.failures:
            raise AssertionError(f"{block.where}: doctest failed\n" + "".join(report))
        return
    # Padding keeps tracebacks on the page's own line numbers.
    code = compile("\n" * (block.line - 1) + block.code, str(block.page), "exec")
    try:
        exec(code, namespace)
    except Exception as err:  # noqa: BLE001 -- reported with the page's line
        raise AssertionError(
            f"{block.where}: {type(err).__name__}: {err}\n{traceback.format_exc()}"
        ) from None


def deployment(name: str, replicas: int = 1, namespace: str = "default") -> dict:
    """A minimal valid Deployment (the world's ``deployment()``, for pages' hidden setups)."""
    labels = {"app": name}
    return {
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }


@contextlib.contextmanager
def running(manager: Any) -> Iterator[Any]:
    """``manager.run()`` on a thread (no signal handlers there) until the block ends (the world's ``running()``)."""
    failure: list[BaseException] = []

    def run() -> None:
        try:
            manager.run()
        except BaseException as err:  # noqa: BLE001 -- SystemExit included: reported below
            failure.append(err)

    thread = threading.Thread(target=run, name="docs-manager-run")
    thread.start()
    try:
        eventually(
            lambda: (
                manager.controllers and all(c.is_running() for c in manager.controllers) or failure
            ),
            timeout=30,
            what="the manager's controllers to run",
        )
        assert not failure, f"Manager.run() ended: {failure[0]!r}"
        yield manager
    finally:
        manager.stop()
        thread.join(30)
        assert not thread.is_alive(), "Manager.run() did not return after stop()"


@pytest.fixture
def world(tmp_path, monkeypatch):
    """The context every page starts from: an embedded server, a client, a kubeconfig in ``~/.kube``."""
    kube = tmp_path / ".kube"
    kube.mkdir()
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    with ApiServer() as server:
        monkeypatch.setenv("KUBECONFIG", server.write_kubeconfig(kube / "config"))
        api_client = server.api_client()
        try:
            yield {
                "__name__": "docs",
                "server": server,
                "api_client": api_client,
                "deployment": deployment,
            }
        finally:
            api_client.close()


def check_the_readme_example(namespace: dict) -> None:
    """README.rst holds no hidden directives (GitHub shows them): its program is run from here."""
    from pyinformers.manager import Manager

    operator = namespace["OPERATOR"]
    manager = Manager(metrics_port=0, health_port=0)  # ~/.kube/config, like the program
    # What OPERATOR.main() would run: its build, with its flags' defaults.
    manager.add(operator.build(manager.factory, None, operator.parse([], environ={})))
    out = io.StringIO()
    with contextlib.redirect_stdout(out), running(manager):
        ResourceClient(namespace["api_client"], CONFIGMAPS).create(
            {"metadata": {"name": "hi", "namespace": "default"}}
        )
        eventually(lambda: "seen default/hi" in out.getvalue(), what="Echo's line")


#: Checks run after a page's blocks, for pages that cannot hold hidden directives.
PAGE_CHECKS = {"README.rst": check_the_readme_example}


@pytest.mark.parametrize("page", RUN_PAGES)
def test_a_docs_page_runs(page, world):
    blocks = BLOCKS[page]
    try:
        for block in [b for b in blocks if b.role == "setup"] + [
            b for b in blocks if b.role == "code"
        ]:
            run_block(block, world)
        if page in PAGE_CHECKS:
            PAGE_CHECKS[page](world)
    except AssertionError:
        _clean_up(blocks, world, report=False)  # the first failure is the one to read
        raise
    _clean_up(blocks, world, report=True)


def _clean_up(blocks: list[Block], namespace: dict, *, report: bool) -> None:
    for block in [b for b in blocks if b.role == "cleanup"]:
        try:
            run_block(block, namespace)
        except AssertionError:
            if report:
                raise


def test_the_docs_have_python_blocks_and_few_are_untested():
    untested = [b for b in ALL if b.untested is not None]
    assert len([b for b in ALL if b.role == "code"]) >= 30
    assert len(untested) <= MAX_UNTESTED, "untested blocks: " + ", ".join(b.where for b in untested)
    for block in untested:
        assert len(block.untested.split()) >= 3, f"{block.where}: say why the block cannot run"


def test_every_untested_block_is_visible_code():
    for block in ALL:
        if block.untested is not None:
            assert block.role == "code", f"{block.where}: hidden blocks always run"


SAMPLE_PAGE = """\
Title
=====

A literal block holding Python::

   x = compute()

Output, not Python::

   created:  {'message': 'hello'}

.. code-block:: yaml

   kind: ConfigMap

>>> 1 + 1
2

.. untested: needs a real cluster to talk to

.. code-block:: python

   run_forever()

.. testsetup::

   import os
"""


def test_the_scanner_finds_every_kind_of_python_block():
    blocks = scan(Path("sample.rst"), SAMPLE_PAGE)
    assert [(b.line, b.role, b.untested, b.code.strip()) for b in blocks] == [
        (6, "code", None, "x = compute()"),
        (16, "code", None, ">>> 1 + 1\n2"),
        (23, "code", "needs a real cluster to talk to", "run_forever()"),
        (27, "setup", None, "import os"),
    ]


def test_a_stray_untested_comment_is_an_error():
    with pytest.raises(AssertionError, match="right before its block"):
        scan(Path("sample.rst"), ".. untested: no reason to skip\n\nSome prose.\n")


def test_a_doctest_with_the_wrong_output_fails_and_its_names_persist_for_the_next_block():
    namespace: dict = {}
    run_block(Block(Path("sample.rst"), 1, ">>> x = 2\n>>> x + 1\n3\n"), namespace)
    assert namespace["x"] == 2
    with pytest.raises(AssertionError, match="doctest failed"):
        run_block(Block(Path("sample.rst"), 1, ">>> x + 1\n4\n"), namespace)


def included_python_files() -> list[tuple[str, Path]]:
    """Every ``.py`` file a page ``literalinclude``'s: (page, file)."""
    found = []
    for page in PAGES:
        for line in page.read_text().splitlines():
            include = _INCLUDE.match(line)
            if include:
                found.append((page.name, (page.parent / include.group(1)).resolve()))
    return found


def test_every_literal_included_python_file_is_run_by_the_suite():
    """An included file is a test the suite collects, or a module one of the suite's tests imports."""
    testpaths = [
        ROOT / p
        for p in re.search(r"^testpaths = (.*)$", (ROOT / "setup.cfg").read_text(), re.M)[1].split()
    ]
    tests = [f for d in testpaths for f in d.rglob("test_*.py")]
    sources = "\n".join(f.read_text() for f in tests)
    included = included_python_files()
    assert len(included) >= 10
    for page, path in included:
        if path in tests or (path.name == "conftest.py" and path.parent in testpaths):
            continue
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        package = module.rsplit(".", 1)[0]
        imported = re.search(
            rf"^\s*(from|import) ({re.escape(module)}|{re.escape(package)}|{path.stem})\b",
            sources,
            re.M,
        )
        assert imported, f"{page} includes {path.relative_to(ROOT)}, which no test runs"
