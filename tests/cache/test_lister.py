"""Tests for pyinformers.cache._lister: reads from the cache."""

from __future__ import annotations

import pytest

from pyinformers.api._selectors import LabelSelector
from pyinformers.cache._lister import Lister
from pyinformers.cache._store import OWNER_UID_INDEX, Indexer, default_indexers
from pyinformers.resources import CONFIGMAPS, NODES


def obj(name, ns=None, labels=None, owner_uid=None):
    md = {"name": name}
    if ns:
        md["namespace"] = ns
    if labels is not None:
        md["labels"] = labels
    if owner_uid:
        md["ownerReferences"] = [{"uid": owner_uid, "controller": True}]
    return {"metadata": md}


@pytest.fixture(params=["indexed", "plain"])
def lister(request):
    store = Indexer(default_indexers()) if request.param == "indexed" else Indexer()
    for o in (
        obj("a", "ns1", {"app": "web", "tier": "fe"}, owner_uid="u1"),
        obj("b", "ns1", {"app": "db"}),
        obj("a", "ns2", {"app": "web"}, owner_uid="u1"),
        obj("c", "ns2"),
        obj("node-1", None, {"role": "worker"}),
    ):
        store.add(o)
    return Lister(store)


def names(objs):
    return sorted((o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objs)


def test_get_by_name_and_namespace(lister):
    assert lister.get("a", namespace="ns1")["metadata"]["labels"]["tier"] == "fe"
    assert lister.namespace("ns1").get("a") is lister.get("a", namespace="ns1")
    assert lister.get("node-1")["metadata"]["name"] == "node-1"
    assert lister.get("a", namespace="nope") is None
    assert (
        lister.get("a") is None
    )  # a bare indexer: the scope is unknown, so both forms are allowed
    with pytest.raises(ValueError):
        lister.get("")


def test_get_returns_the_cached_object_itself(lister):
    assert lister.get("a", namespace="ns1") is lister.indexer.get_by_key("ns1/a")


def test_list_all_and_by_namespace(lister):
    assert len(lister.list()) == 5
    assert names(lister.list(namespace="ns1")) == [("ns1", "a"), ("ns1", "b")]
    assert names(lister.namespace("ns1").list()) == [("ns1", "a"), ("ns1", "b")]
    assert lister.list(namespace="empty") == []


@pytest.mark.parametrize(
    "selector",
    ["app=web", {"matchLabels": {"app": "web"}}, LabelSelector.parse("app in (web)")],
)
def test_list_with_label_selectors(lister, selector):
    assert names(lister.list(selector=selector)) == [("ns1", "a"), ("ns2", "a")]
    assert names(lister.list(namespace="ns2", selector=selector)) == [("ns2", "a")]
    assert names(lister.namespace("ns2").list(selector)) == [("ns2", "a")]


def test_list_with_a_selector_on_unlabelled_objects(lister):
    assert names(lister.namespace("ns2").list("!app")) == [("ns2", "c")]


def test_list_rejects_a_bad_selector(lister):
    with pytest.raises(ValueError, match="position"):
        lister.list(selector="app in (web")


# -- the namespace can be neither swapped nor forgotten -------------------------------------


def scoped(resource):
    store = Indexer(default_indexers())
    store.add(obj("web", "default"))
    store.add(obj("node-1", None))
    return Lister(store, resource=resource)


def test_a_namespaced_lister_refuses_a_get_without_its_namespace():
    lister = scoped(CONFIGMAPS)
    with pytest.raises(ValueError, match="namespaced.*namespace\\(ns\\)"):
        lister.get("web")
    assert lister.namespace("default").get("web")["metadata"]["name"] == "web"


def test_the_namespace_of_a_get_is_never_positional():
    """client-go's order is (namespace, name); ours was (name, namespace): neither may be guessed."""
    lister = scoped(CONFIGMAPS)
    with pytest.raises(TypeError):
        lister.get("default", "web")  # type: ignore[misc]
    with pytest.raises(TypeError):
        lister.list("default")  # type: ignore[misc]


def test_a_key_is_not_a_name():
    with pytest.raises(ValueError, match="'/'"):
        scoped(CONFIGMAPS).get("default/web")


def test_a_cluster_scoped_lister_refuses_a_namespace():
    lister = scoped(NODES)
    assert lister.get("node-1")["metadata"]["name"] == "node-1"
    with pytest.raises(ValueError, match="cluster-scoped"):
        lister.get("node-1", namespace="default")
    with pytest.raises(ValueError, match="cluster-scoped"):
        lister.namespace("default")


def test_the_factorys_listers_know_their_scope(api_client):
    from pyinformers.cache import SharedInformerFactory

    factory = SharedInformerFactory(api_client, metrics_registry=False)
    with pytest.raises(ValueError, match="namespaced"):
        factory.lister(CONFIGMAPS).get("anything")
    with pytest.raises(ValueError, match="cluster-scoped"):
        factory.lister(NODES).namespace("default")


def test_by_index_for_children_of_an_owner():
    store = Indexer(default_indexers())
    store.add(obj("a", "ns", owner_uid="u1"))
    store.add(obj("b", "ns", owner_uid="u2"))
    assert names(Lister(store).by_index(OWNER_UID_INDEX, "u1")) == [("ns", "a")]


def test_a_namespaced_lister_lists_by_an_index_within_its_namespace_only():
    # The index value is the owner's name alone, as IndexField + MatchingFields + InNamespace has it.
    store = Indexer(
        {"owner": lambda o: [r["name"] for r in o["metadata"].get("ownerReferences", [])]}
    )
    for name, ns in (("j1", "team-a"), ("j2", "team-a"), ("j3", "team-b")):
        child = obj(name, ns)
        child["metadata"]["ownerReferences"] = [{"name": "nightly", "uid": ns}]
        store.add(child)
    lister = Lister(store, resource=CONFIGMAPS)
    assert names(lister.namespace("team-a").by_index("owner", "nightly")) == [
        ("team-a", "j1"),
        ("team-a", "j2"),
    ]
    assert names(lister.namespace("team-b").by_index("owner", "nightly")) == [("team-b", "j3")]
    assert lister.namespace("team-c").by_index("owner", "nightly") == []
