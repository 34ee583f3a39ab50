"""The scaffold's templates (package data under ``templates/``) and their one substitution rule.

``{{key}}`` is replaced by ``values[key]``; a key without a value is a
``KeyError`` naming the template (a scaffold bug, never the user's). No other
syntax: choices between variants are made in Python, which passes the text
of the variant as a value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from importlib import resources

__all__ = ["render"]

_TOKEN = re.compile(r"\{\{(\w+)\}\}")


def render(template: str, values: Mapping[str, str]) -> str:
    text = resources.files("pyinformers.scaffold").joinpath("templates", template).read_text()

    def value(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            raise KeyError(f"template {template}: no value for {{{{{key}}}}}")
        return values[key]

    return _TOKEN.sub(value, text)
