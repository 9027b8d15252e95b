"""JSON Schemas of the converter's classes, made from their declarations.

A field's type gives its JSON type; its validator, a
:class:`~pushcore.domain.validation.Rule`, the rules the converter enforces; its
metadata (:func:`~pushcore.domain.validation.about`) what it means; the class
docstring what the whole is. Request inputs and response views are described
alike, so the API's document says what the converter checks and writes.
:func:`components` names the schemas and gathers every class they refer to.
"""

from __future__ import annotations

import enum
import inspect
import types
import typing
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import attrs

from pushcore.converter._base import camel, converter
from pushcore.converter._views import JSON_NAME, OMIT_IF_NONE
from pushcore.domain.validation import SCHEMA, Rule

Json = dict[str, Any]

EXAMPLE_TIME = "2026-11-21T10:15:30.123Z"

_SCALARS: dict[Any, str] = {str: "string", int: "integer", bool: "boolean"}


def json_schema(cls: type[Any]) -> Json:
    """The schema of the attrs class ``cls``: a closed object, with camelCase names.

    A nested attrs class comes out as ``{"$ref": <the class>}``, for the caller
    to name; a field is required unless it has a default (or is left out of the
    JSON when None).
    """
    properties: Json = {}
    required: list[str] = []
    for field in attrs.fields(attrs.resolve_types(cls)):
        name = field.metadata.get(JSON_NAME, camel(field.name))
        properties[name] = _field(field)
        if field.default is attrs.NOTHING and not field.metadata.get(OMIT_IF_NONE):
            required.append(name)
    schema: Json = {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,  # unknown fields are refused
    }
    doc = inspect.getdoc(cls)
    if doc:
        # The first paragraph, with the docstring's ``code`` as the API docs' `code`.
        schema["description"] = " ".join(doc.split("\n\n")[0].split()).replace("``", "`")
    return schema


def example(cls: type[Any]) -> Json:
    """An instance of ``cls`` as JSON: the declared example of each field that has one."""
    fields = attrs.fields(attrs.resolve_types(cls))
    facts = ((f.metadata.get(JSON_NAME, camel(f.name)), f.metadata.get(SCHEMA, {})) for f in fields)
    return {name: fact["examples"][0] for name, fact in facts if "examples" in fact}


def components(tree: Any, written: Json, prefix: str = "#/components/schemas/") -> tuple[Any, Json]:
    """``tree`` (any JSON) with each ``{"$ref": <class>}`` in it named, and the schemas by
    name: those ``written`` (by hand), and one made from each class referred to.

    A class is named by its own ``schema_name``, else after itself less a ``View`` suffix.
    """
    found: dict[str, type[Any]] = {}

    def named(node: Any) -> Any:
        if isinstance(node, list):
            return [named(item) for item in node]
        if not isinstance(node, dict):
            return node
        target = node.get("$ref")
        if isinstance(target, type):
            name = vars(target).get("schema_name", target.__name__.removesuffix("View"))
            assert found.setdefault(name, target) is target, f"two schemas named {name}"
            node = node | {"$ref": prefix + name}
        return {key: named(value) for key, value in node.items()}

    tree = named(tree)
    schemas: Json = named(written)
    while missing := [name for name in found if name not in schemas]:
        for name in missing:
            schemas[name] = named(json_schema(found[name]))
    return tree, schemas


def _field(field: attrs.Attribute[Any]) -> Json:
    tp, nullable = _without_none(field.type)
    nullable = nullable and not field.metadata.get(OMIT_IF_NONE)  # None: left out, not null
    schema = _of_type(tp)
    facts = dict(field.metadata.get(SCHEMA, {}))
    words = [facts.pop("description", "")]
    if isinstance(field.validator, Rule):
        schema.update(field.validator.schema)
        words.append(field.validator.note)
    if field.default is not attrs.NOTHING and field.default is not None:
        schema["default"] = converter.unstructure(field.default)
    schema.update(facts)
    if any(words):
        schema["description"] = " ".join(w for w in words if w)
    return {"anyOf": [schema, {"type": "null"}]} if nullable else schema


def _without_none(tp: Any) -> tuple[Any, bool]:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        (inner,) = args  # no union of two JSON types in the API
        return inner, len(args) < len(typing.get_args(tp))
    return tp, False


def _of_type(tp: Any) -> Json:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (tuple, list):
        return {"type": "array", "items": _of_type(args[0])}
    if origin in (dict, Mapping):
        return {"type": "object", "additionalProperties": _of_type(args[1])}
    if attrs.has(tp):
        return {"$ref": tp}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return {"type": "string", "enum": [member.value for member in tp]}
    if tp is datetime:
        return {"type": "string", "format": "date-time", "examples": [EXAMPLE_TIME]}
    if tp is Any:
        return {}  # any JSON value (a schedule's template, as given)
    return {"type": _SCALARS[tp]}
