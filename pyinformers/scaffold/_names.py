"""What the scaffold accepts as names: Kubernetes' rules for groups, kinds and versions, Python's for packages.

Each check returns the name it accepted or raises :class:`ScaffoldError`
with one line saying what is wrong and what is accepted. Pure functions.
"""

from __future__ import annotations

import keyword
import re
import sys

__all__ = [
    "ScaffoldError",
    "check_domain",
    "check_group",
    "check_kind",
    "check_project_name",
    "check_version",
    "dns_name",
]

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_KIND = re.compile(r"^[A-Z][A-Za-z0-9]*$")
_VERSION = re.compile(r"^v[1-9][0-9]*((alpha|beta)[1-9][0-9]*)?$")
_PACKAGE = re.compile(r"^[a-z][a-z0-9_]*$")
#: Groups the API server reserves: a CRD there needs the api-approved.kubernetes.io annotation.
_PROTECTED = ("k8s.io", "kubernetes.io")
#: Package names that would shadow what the project imports.
_TAKEN = {"pyinformers", "kubernetes", "tests", "test", "yaml", "operator", "typing", "setup"}


class ScaffoldError(Exception):
    """A scaffold command refused its input or its target; ``str()`` is the one-line reason."""


def _subdomain_problem(value: str) -> str | None:
    if not value:
        return "is empty"
    if len(value) > 253:
        return "is longer than 253 characters"
    for label in value.split("."):
        if len(label) > 63:
            return f"has a label longer than 63 characters ({label[:20]}...)"
        if not _DNS_LABEL.match(label):
            return f"has the label {label!r}, not lowercase letters, digits and '-' (starting and ending alphanumeric)"
    return None


def check_group(group: str, domain: str) -> str:
    """The full API group ``group.domain`` (a DNS subdomain with a dot, outside the protected groups)."""
    if "." in group and not domain:
        full = group
    else:
        problem = _subdomain_problem(group)
        if problem is None and "." in group:
            problem = "contains a dot: give the short name and the rest as --domain"
        if problem:
            raise ScaffoldError(
                f"invalid group {group!r}: it {problem}; accepted: a DNS label such as 'webapp' "
                "(the API group is GROUP.DOMAIN)"
            )
        full = f"{group}.{check_domain(domain)}"
    problem = _subdomain_problem(full)
    if problem:
        raise ScaffoldError(
            f"invalid API group {full!r}: it {problem}; accepted: a DNS subdomain of at most 253 characters"
        )
    if any(full == p or full.endswith("." + p) for p in _PROTECTED):
        raise ScaffoldError(
            f"invalid API group {full!r}: groups under k8s.io and kubernetes.io are reserved for "
            "Kubernetes' own APIs; accepted: a domain you own (--domain example.com)"
        )
    return full


def check_domain(domain: str) -> str:
    """A DNS subdomain with at least one dot (the API server requires one in a CRD's group)."""
    problem = _subdomain_problem(domain)
    if problem is None and "." not in domain:
        problem = "has no dot (a CRD's group must be a domain such as example.com)"
    if problem:
        raise ScaffoldError(
            f"invalid domain {domain!r}: it {problem}; accepted: a DNS subdomain such as example.com"
        )
    return domain


def check_kind(kind: str) -> str:
    """An UpperCamelCase kind whose lowercase form is a DNS label (Kubernetes' rule for CRD kinds)."""
    if not _KIND.match(kind) or len(kind) > 63:
        raise ScaffoldError(
            f"invalid kind {kind!r}: accepted: UpperCamelCase letters and digits, starting with a "
            "capital, at most 63 characters (e.g. Guestbook)"
        )
    if _VERSION.match(kind.lower()):
        raise ScaffoldError(
            f"invalid kind {kind!r}: its module would be named like a version (api/{kind.lower()}/); "
            "accepted: a kind that is not a version name (e.g. Guestbook)"
        )
    return kind


def check_version(version: str) -> str:
    """A Kubernetes API version: ``v1``, ``v2beta1``, ``v1alpha3`` ..."""
    if not _VERSION.match(version):
        raise ScaffoldError(
            f"invalid version {version!r}: accepted: v<N>, v<N>alpha<M> or v<N>beta<M> with N, M >= 1 "
            "(e.g. v1, v1alpha1, v2beta3)"
        )
    return version


def check_project_name(name: str) -> str:
    """A lowercase Python package name that shadows nothing the project imports."""
    if (
        not _PACKAGE.match(name)
        or keyword.iskeyword(name)
        or len(name) > 63
        or name.endswith("_")
        or "__" in name
    ):
        raise ScaffoldError(
            f"invalid project name {name!r}: accepted: a Python package name in lowercase letters, "
            "digits and single underscores, starting with a letter (e.g. guestbook_operator)"
        )
    if name in _TAKEN or name in sys.stdlib_module_names:
        raise ScaffoldError(
            f"invalid project name {name!r}: it shadows the module {name!r} the project would import; "
            "accepted: another Python package name (e.g. guestbook_operator)"
        )
    return name


def dns_name(name: str) -> str:
    """The Kubernetes name of a project (``guestbook_operator`` -> ``guestbook-operator``)."""
    return name.replace("_", "-")
