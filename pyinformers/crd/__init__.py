"""pyinformers.crd: typed custom resources, both ways.

* **Types to CRD**: spec and status as ``TypedDict`` s with ``Annotated``
  markers (:class:`Minimum`, :class:`Pattern`, :class:`Rule` ...), a
  :class:`CustomResource` naming group, kind and :class:`Version` s;
  :meth:`CustomResource.definition` is the CRD (``python -m pyinformers crd
  MODULE`` prints it as YAML). Built-in types (:mod:`pyinformers.crd.k8s`:
  ``PodTemplateSpec``, ``ObjectReference``, ``Condition`` ...) bring the API
  server's own schemas.
* **CRD to types**: :func:`types_module` writes a Python module of TypedDicts
  for any CRD (``python -m pyinformers types FILE``).

TypedDicts are static types over the plain dicts the cache holds: a typed
lister returns the very same dicts, so typing costs nothing at run time.
See docs/custom-resources.rst.
"""

from pyinformers._exports import publish
from pyinformers.crd._codegen import types_module
from pyinformers.crd._definition import CustomResource, PrinterColumn, Scale, Version, plural_of
from pyinformers.crd._markers import (
    Default,
    Description,
    EmbeddedResource,
    Enum,
    Example,
    Format,
    IntOrString,
    Keywords,
    ListMapKeys,
    ListType,
    MapType,
    Marker,
    Maximum,
    MaxItems,
    MaxLength,
    MaxProperties,
    MicroTime,
    Minimum,
    MinItems,
    MinLength,
    MinProperties,
    MultipleOf,
    Nullable,
    Pattern,
    PreserveUnknownFields,
    Quantity,
    Rule,
    Schemaless,
    Time,
    Title,
    UniqueItems,
)
from pyinformers.crd._object import Object
from pyinformers.crd._schema import SchemaError, object_schema, type_schema
from pyinformers.crd._yaml import dump_yaml

__all__ = [
    "CustomResource",
    "Object",
    "Version",
    "PrinterColumn",
    "Scale",
    "plural_of",
    "SchemaError",
    "object_schema",
    "type_schema",
    "dump_yaml",
    "types_module",
    "Marker",
    "Minimum",
    "Maximum",
    "MultipleOf",
    "MinLength",
    "MaxLength",
    "Pattern",
    "Format",
    "MinItems",
    "MaxItems",
    "UniqueItems",
    "MinProperties",
    "MaxProperties",
    "Enum",
    "Default",
    "Description",
    "Title",
    "Example",
    "Nullable",
    "ListType",
    "ListMapKeys",
    "MapType",
    "PreserveUnknownFields",
    "EmbeddedResource",
    "Rule",
    "Schemaless",
    "Keywords",
    "IntOrString",
    "Quantity",
    "Time",
    "MicroTime",
]

publish(globals(), __all__)
