"""``Object``: the base of a custom resource's root type (apiVersion, kind and metadata, typed)."""

from typing_extensions import TypedDict

from pyinformers.k8s import ObjectMeta

__all__ = ["Object"]


class Object(TypedDict):
    """What every object the API server returns has; subclass it and add ``spec`` and ``status``.

    The three keys stay out of the generated schema: the server owns them.
    """

    apiVersion: str
    kind: str
    metadata: ObjectMeta
