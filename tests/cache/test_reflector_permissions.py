"""A missing ``list`` permission surfaces when an informer starts, not at its first relist.

kube-apiserver authorizes a streaming list (``watch`` with ``sendInitialEvents``)
as a plain ``watch``: with ``get`` and ``watch`` but no ``list``, the cache
syncs, and the 403 comes with the first fallback to a list (after a 410, or
from a server that refuses streaming lists). The reflector asks once, before
its first streaming list (a SelfSubjectAccessReview), and reports what to add
to the Role. The embedded server has no RBAC and does not serve the review:
there the check must stay silent.
"""

from __future__ import annotations

import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pyinformers.api._errors import Forbidden
from pyinformers.api._permissions import MissingPermission, permission_advice
from pyinformers.api._resource import Resource
from pyinformers.cache.reflector._states import BackingOff
from pyinformers.resources import CONFIGMAPS
from pyinformers.testing import ScriptedListerWatcher, eventually
from tests.cache.test_reflector import make
from tests.k8s.test_informers import WAIT, start
from tests.support.informers import make_informer

pytestmark = pytest.mark.timeout(120)

NAMES = st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True)
RESOURCES = st.builds(
    lambda group, plural, namespaced: Resource(
        group, "v1", plural, plural.capitalize(), namespaced=namespaced
    ),
    st.sampled_from(["", "apps", "example.com"]),
    st.from_regex(r"[a-z]{3,12}s", fullmatch=True),
    st.booleans(),
)


@given(
    resource=RESOURCES, verb=st.sampled_from(["list", "watch", "get"]), namespace=st.none() | NAMES
)
def test_the_advice_names_the_verb_the_rule_and_the_role_that_must_hold_it(
    resource, verb, namespace
):
    advice = permission_advice(resource, verb, namespace)
    assert f'add "{verb}"' in advice
    assert f'apiGroups: ["{resource.group}"], resources: ["{resource.plural}"]' in advice
    if resource.namespaced and namespace:
        assert (
            f'the Role the controller\'s ServiceAccount is bound to in namespace "{namespace}"'
            in advice
        )
    else:  # cluster-scoped, or every namespace: only a ClusterRole grants it
        assert "ClusterRole" in advice and "namespace" not in advice
    error = MissingPermission(resource, verb, namespace, why="because")
    assert isinstance(error, Forbidden) and error.code == 403  # what a Manager refuses to start on
    assert f"may not {verb} {resource.plural}" in error.message and advice in error.message
    assert (f'in namespace "{namespace}"' in error.message) == bool(
        resource.namespaced and namespace
    )


def test_a_list_refused_later_says_what_to_add_to_the_role():
    refused = Forbidden(
        'configmaps is forbidden: User "system:serviceaccount:ops:op" cannot list resource '
        '"configmaps" in API group "" in the namespace "shop"',
        code=403,
    )
    lw = ScriptedListerWatcher(lists=[refused])
    lw.resource, lw.namespace = CONFIGMAPS, "shop"  # what a ListWatch says about itself
    reflector, _, _ = make(lw, use_watch_list=False)
    state = reflector.step()
    state = reflector.step()
    assert isinstance(state, BackingOff)
    assert 'cannot list resource "configmaps"' in reflector.last_error  # the server's words
    assert (
        'add "list" to the verbs of the rule {apiGroups: [""], resources: ["configmaps"]} in the Role '
        'the controller\'s ServiceAccount is bound to in namespace "shop"'
    ) in reflector.last_error


class _Errors:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.errors: list[BaseException] = []

    def __call__(self, error: BaseException) -> None:
        with self.lock:
            self.errors.append(error)

    def missing(self) -> list[MissingPermission]:
        with self.lock:
            return [e for e in self.errors if isinstance(e, MissingPermission)]


def test_with_every_read_permission_the_check_reports_nothing(k8s, informers):
    # Embedded: no SelfSubjectAccessReview served (the check cannot tell, and stays silent);
    # real: an admin may list.
    errors = _Errors()
    informer = start(
        make_informer(
            k8s.api_client(),
            CONFIGMAPS,
            namespace=k8s.namespace,
            reflector_options={"on_watch_error": errors},
        ),
        informers,
    )
    assert informer.reflector.stats.lists == 1
    assert errors.missing() == [] and informer.reflector.stats.errors == 0


@pytest.mark.k8s_server("real")
def test_a_missing_list_permission_is_reported_when_the_informer_starts(k8s, informers):
    sa = k8s.client_for_service_account(
        "no-list",
        rules=[{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "watch"]}],
    )
    errors = _Errors()
    informer = start(
        make_informer(
            sa, CONFIGMAPS, namespace=k8s.namespace, reflector_options={"on_watch_error": errors}
        ),
        informers,
    )
    # The streaming list is allowed (a watch) and fills the cache ...
    assert informer.reflector.stats.lists == 1 and informer.indexer.get_by_key(
        f"{k8s.namespace}/kube-root-ca.crt"
    )
    # ... and what a fallback list would need was reported before it, once.
    [missing] = errors.missing()
    assert (missing.verb, missing.resource, missing.namespace) == (
        "list",
        CONFIGMAPS,
        k8s.namespace,
    )
    assert (
        f'in the Role the controller\'s ServiceAccount is bound to in namespace "{k8s.namespace}"'
        in str(missing)
    )


@pytest.mark.k8s_server("real")
def test_the_list_a_missing_permission_refuses_names_the_fix(k8s, informers):
    sa = k8s.client_for_service_account(
        "no-list-listing",
        rules=[{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "watch"]}],
    )
    informer = make_informer(
        sa,
        CONFIGMAPS,
        namespace=k8s.namespace,
        reflector_options={"use_watch_list": False, "backoff_initial": 0.05},
    )
    informers.append(informer)
    informer.start()
    eventually(
        lambda: informer.reflector is not None and "cannot list" in informer.reflector.last_error,
        WAIT,
        what="the refused list",
    )
    assert (
        'add "list" to the verbs of the rule {apiGroups: [""], resources: ["configmaps"]}'
        in informer.reflector.last_error
    )
    assert not informer.has_synced()
