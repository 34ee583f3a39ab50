"""CRDs as YAML: keys in the order built, multi-line descriptions as literal blocks."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import yaml

__all__ = ["dump_yaml"]


class _Dumper(yaml.SafeDumper):
    """SafeDumper writing a string with a newline as a ``|`` block, as controller-gen's output reads."""


def _string(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    if "\n" in value and not any(line != line.rstrip() for line in value.splitlines()):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _string)


def dump_yaml(documents: Iterable[Any], *, header: str = "") -> str:
    """YAML documents separated by ``---``, after ``header`` as comment lines."""
    lines = [f"# {line}".rstrip() for line in header.splitlines()]
    body = "---\n".join(
        yaml.dump(
            doc,
            Dumper=_Dumper,
            sort_keys=False,
            default_flow_style=False,
            allow_unicode=True,
            width=100,
        )
        for doc in documents
    )
    return "".join(line + "\n" for line in lines) + body
