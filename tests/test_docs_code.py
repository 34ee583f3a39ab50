"""Every Python block in the docs is checked by the suite.

Whole programs and tests are not written in the ``.rst`` files at all: they
live in ``docs/quickstart/`` (and ``samples/``), are ``literalinclude``'d, and
run as tests. What remains inline is fragments (``factory.client(...)`` in the
middle of a discussion). Each must compile, and each of its ``import``
statements must run, so a fragment cannot name a module or a public name that
does not exist (or no longer does).
"""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted((ROOT / "docs").glob("*.rst")) + [ROOT / "README.rst"]

_DIRECTIVE = re.compile(r"^(\s*)\.\. code-block:: python\s*$")
_LITERAL = re.compile(r"::\s*$")


def _block(lines: list[str], start: int, indent: int) -> tuple[str, int]:
    """The indented block after line ``start`` (dedented), and the line after it."""
    body: list[str] = []
    i = start + 1
    while i < len(lines) and lines[i].strip().startswith(":") and not body:  # directive options
        i += 1
    while i < len(lines):
        line = lines[i]
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        body.append(line)
        i += 1
    text = "\n".join(body)
    width = min((len(l) - len(l.lstrip()) for l in body if l.strip()), default=0)
    return "\n".join(l[width:] for l in body).strip("\n") + "\n" if text.strip() else "", i


def python_blocks() -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        lines = page.read_text().splitlines()
        for n, line in enumerate(lines):
            directive = _DIRECTIVE.match(line)
            if directive:
                code, _ = _block(lines, n, len(directive.group(1)))
            elif _LITERAL.search(line) and not line.lstrip().startswith(".."):
                code, _ = _block(lines, n, len(line) - len(line.lstrip()))
                if "pyinformers" not in code or not ("import " in code or "=" in code):
                    continue  # output, shell, or prose: not Python
                try:
                    ast.parse(code)
                except SyntaxError:
                    continue  # a literal block that only mentions pyinformers (a log line, a listing)
            else:
                continue
            if code:
                found.append((f"{page.name}:{n + 1}", code))
    return found


BLOCKS = python_blocks()


def test_the_docs_have_python_blocks_to_check():
    assert len(BLOCKS) >= 15


@pytest.mark.parametrize("where, code", BLOCKS, ids=[where for where, _ in BLOCKS])
def test_a_docs_python_block_compiles_and_its_imports_run(where, code):
    tree = ast.parse(code, filename=where)
    imports = [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]
    # The reader's own modules (``my_operator``) are theirs; everything else must import.
    ours = [node for node in imports if _top(node) == "pyinformers" or importlib.util.find_spec(_top(node))]
    exec(compile(ast.Module(body=ours, type_ignores=[]), where, "exec"), {})


def _top(node: ast.Import | ast.ImportFrom) -> str:
    name = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
    return (name or "").split(".")[0]
