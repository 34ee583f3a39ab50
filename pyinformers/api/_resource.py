"""``Resource``: which kind of object a client, informer or lister talks about.

A :class:`Resource` is a value (frozen dataclass): group, version, plural,
kind and scope. It knows how to build the REST path of a collection or of one
object, so nothing else in the library formats URLs. The catalog of built-in
resources lives in :mod:`pyinformers.resources`; custom resources come from
their CustomResourceDefinition via :meth:`Resource.from_crd`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic
from urllib.parse import quote

from typing_extensions import TypeVar

__all__ = ["ObjectT", "Resource", "join_group_version"]


def _segment(value: str, what: str) -> str:
    """``value`` as one path segment, refused unless it can only mean itself.

    The rules client-go applies to names (``IsValidPathSegmentName``): not
    empty, not ``.`` or ``..`` (the HTTP library would remove such a dot
    segment, and ``delete("..", namespace="ns")`` would address the namespace
    itself), no ``/`` and no ``%`` (which could smuggle either, encoded).
    """
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} must be a non-empty string, got {value!r}")
    if value in (".", ".."):
        raise ValueError(f"{what} may not be {value!r}")
    for bad in ("/", "%"):
        if bad in value:
            raise ValueError(f"{what} may not contain {bad!r}: {value!r}")
    return quote(value, safe=":@")


def join_group_version(group: str, version: str) -> str:
    """``"apps/v1"``, or ``"v1"`` for the core group: an ``apiVersion`` (client-go's GroupVersion string)."""
    return f"{group}/{version}" if group else version


#: The type of a resource's objects, for type checkers only: a TypedDict such as
#: ``pyinformers.k8s.Pod``, or ``dict[str, Any]`` (the default) when nobody said.
ObjectT = TypeVar("ObjectT", default=dict[str, Any])


@dataclass(frozen=True)
class Resource(Generic[ObjectT]):
    """A Kubernetes resource type: ``Resource("apps", "v1", "deployments", "Deployment")``.

    ``group`` is ``""`` for the core group (pods, services, ...). Instances are
    immutable and hashable: use them as dict keys (the informer factory does).

    Generic in the type of its objects, for type checkers only:
    ``PODS: Resource[Pod]`` makes listers, informers and clients of ``PODS``
    hand out ``Pod`` s (TypedDicts, so the same plain dicts at run time).
    A ``Resource`` nobody typed is a ``Resource[dict[str, Any]]``; code that
    takes any resource says ``Resource[Any]``.
    """

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.group, str):
            raise ValueError(f"group must be a string, got {self.group!r}")
        for field in ("version", "plural", "kind"):
            value = getattr(self, field)
            if not isinstance(value, str) or not value:
                raise ValueError(f"Resource.{field} must be a non-empty string, got {value!r}")
            if "/" in value:
                raise ValueError(f"Resource.{field} must not contain '/': {value!r}")
        if "/" in self.group:
            raise ValueError(f"Resource.group must not contain '/': {self.group!r}")

    @property
    def api_version(self) -> str:
        """The ``apiVersion`` objects of this resource carry: ``"v1"`` or ``"apps/v1"``."""
        return join_group_version(self.group, self.version)

    @property
    def group_version(self) -> str:
        """Same as :attr:`api_version` (client-go's GroupVersion string)."""
        return self.api_version

    @property
    def group_resource(self) -> str:
        """``plural.group`` (``"deployments.apps"``; just ``"pods"`` for core), as RBAC and errors name it."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    def path(
        self,
        namespace: str | None = None,
        name: str | None = None,
        subresource: str | None = None,
    ) -> str:
        """The REST path of the collection, or of one object (and its subresource).

        ``namespace=None`` on a namespaced resource addresses all namespaces
        (valid for list and watch only). A namespace given for a cluster-scoped
        resource is an error, as is a subresource without a name.
        """
        prefix = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        parts = [prefix]
        if namespace is not None:
            if not self.namespaced:
                raise ValueError(
                    f"{self} is cluster-scoped: no namespace allowed (got {namespace!r})"
                )
            parts.append("namespaces")
            parts.append(_segment(namespace, "namespace"))
        parts.append(self.plural)
        if name is not None:
            parts.append(_segment(name, "name"))
        if subresource is not None:
            if name is None:
                raise ValueError("a subresource needs an object name")
            parts.append(_segment(subresource, "subresource"))
        return "/".join(parts)

    def __str__(self) -> str:
        return f"{self.api_version}/{self.plural}"

    # -- custom resources ---------------------------------------------------------------
    @classmethod
    def from_crd(
        cls,
        crd: Mapping[str, Any] | str | os.PathLike[str],
        version: str | None = None,
    ) -> Resource[Any]:
        """The resource a CustomResourceDefinition defines.

        ``crd`` is the CRD as a dict, or the path of a YAML (or JSON) file
        holding it (the first document whose kind is CustomResourceDefinition
        when the file has several). ``version`` picks one of ``spec.versions``;
        by default the storage version, else the first served one.

        Raises :class:`ValueError` when the CRD (or the file's YAML) is malformed
        -- a file that is not UTF-8 raises :class:`UnicodeDecodeError`, a
        ValueError too -- or when ``version`` is not one it defines or serves;
        :class:`OSError` when the file cannot be read.
        """
        if isinstance(crd, (str, os.PathLike)):
            crd = _load_crd_file(crd)
        if not isinstance(crd, Mapping):
            raise ValueError(f"a CRD must be a mapping, got {type(crd).__name__}")
        kind = crd.get("kind")
        if kind is not None and kind != "CustomResourceDefinition":
            raise ValueError(f"not a CustomResourceDefinition (kind {kind!r})")
        spec = crd.get("spec")
        if not isinstance(spec, Mapping):
            raise ValueError("CRD has no spec")
        group = spec.get("group")
        names = spec.get("names")
        if not isinstance(group, str) or not group:
            raise ValueError("CRD spec.group is missing")
        if not isinstance(names, Mapping) or not names.get("plural") or not names.get("kind"):
            raise ValueError("CRD spec.names needs plural and kind")
        scope = spec.get("scope", "Namespaced")
        if scope not in ("Namespaced", "Cluster"):
            raise ValueError(f"CRD spec.scope must be Namespaced or Cluster, got {scope!r}")

        versions = spec.get("versions")
        if not versions and spec.get("version"):  # apiextensions v1beta1 style
            versions = [{"name": spec["version"], "served": True, "storage": True}]
        if not isinstance(versions, list) or not versions:
            raise ValueError("CRD spec.versions is empty")
        entries = [v for v in versions if isinstance(v, Mapping) and isinstance(v.get("name"), str)]
        if not entries:
            raise ValueError("CRD spec.versions has no named versions")

        if version is not None:
            chosen = next((v for v in entries if v["name"] == version), None)
            if chosen is None:
                known = ", ".join(v["name"] for v in entries)
                raise ValueError(
                    f"CRD {names['plural']}.{group} has no version {version!r} (has {known})"
                )
            if chosen.get("served", True) is False:
                raise ValueError(f"version {version!r} of {names['plural']}.{group} is not served")
        else:
            served = [v for v in entries if v.get("served", True) is not False]
            chosen = next((v for v in served if v.get("storage")), None) or (
                served[0] if served else None
            )
            if chosen is None:
                raise ValueError(f"CRD {names['plural']}.{group} serves no version")
        return cls(
            group, chosen["name"], str(names["plural"]), str(names["kind"]), scope == "Namespaced"
        )


def _load_crd_file(path: str | os.PathLike[str]) -> Mapping[str, Any]:
    import yaml  # only needed here; kept off the import path of everything else

    with open(path, encoding="utf-8") as handle:
        try:
            documents = [doc for doc in yaml.safe_load_all(handle) if doc is not None]
        except (
            yaml.YAMLError
        ) as error:  # one line naming the file and where, not a parser traceback
            where = getattr(error, "problem_mark", None)
            at = f" (line {where.line + 1}, column {where.column + 1})" if where is not None else ""
            problem = getattr(error, "problem", None) or type(error).__name__
            raise ValueError(f"{os.fspath(path)}: not valid YAML{at}: {problem}") from None
    if not documents:
        raise ValueError(f"{os.fspath(path)}: no YAML document")
    for doc in documents:
        if isinstance(doc, Mapping) and doc.get("kind") == "CustomResourceDefinition":
            return doc
    if len(documents) == 1:
        return documents[0]
    raise ValueError(
        f"{os.fspath(path)}: no CustomResourceDefinition among {len(documents)} documents"
    )
