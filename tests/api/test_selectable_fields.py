"""Field selectors a built-in resource cannot serve are refused before any request."""

from __future__ import annotations

import pytest

from pyinformers.api import Resource, as_field_selector
from pyinformers.api._fields import check_selectable, selectable_fields
from pyinformers.resources import CONFIGMAPS, NAMESPACES, PODS, SECRETS


@pytest.mark.parametrize(
    "resource, selector",
    [
        (PODS, "spec.nodeName=n1"),
        (PODS, "status.phase!=Running,metadata.name=x"),
        (SECRETS, "type=Opaque"),
        (CONFIGMAPS, "metadata.namespace=a"),
        (NAMESPACES, "status.phase=Active"),
        (
            Resource("example.com", "v1", "widgets", "Widget"),
            "spec.color=red",
        ),  # custom resources: the server decides
    ],
)
def test_a_selectable_field_passes(resource, selector):
    check_selectable(resource, as_field_selector(selector))


@pytest.mark.parametrize(
    "resource, selector, field",
    [
        (CONFIGMAPS, "data.x=1", "data.x"),
        (SECRETS, "spec.nodeName=n1", "spec.nodeName"),
        (NAMESPACES, "metadata.namespace=x", "metadata.namespace"),
    ],
)
def test_a_field_the_resource_does_not_offer_is_refused_naming_what_it_offers(
    resource, selector, field
):
    with pytest.raises(ValueError, match=f"'{field}' is not a selectable field") as error:
        check_selectable(resource, as_field_selector(selector))
    assert "metadata.name" in str(error.value) and str(resource) in str(error.value)


def test_a_resource_without_a_table_entry_offers_name_and_namespace():
    assert selectable_fields("apps", "deployments") == ("metadata.name", "metadata.namespace")
    assert selectable_fields("rbac.authorization.k8s.io", "clusterroles", namespaced=False) == (
        "metadata.name",
    )
