"""The single cattrs converter, strict about JSON types, and request structuring.

Validation belongs to the edges: :func:`structure_request` turns a decoded
JSON body into a domain input class, checking each field's type and its
validator separately so that one 400 lists every invalid field.
"""

from __future__ import annotations

import enum
import types
import typing
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

import attrs
import cattrs

from pushcore.domain.errors import FieldError, InvalidJson, ValidationError
from pushcore.domain.timefmt import format_timestamp
from pushcore.domain.validation import NESTED

T = TypeVar("T")

converter = cattrs.Converter(forbid_extra_keys=True)


def _strict(kind: type[Any]) -> Any:
    def hook(value: Any, _type: Any) -> Any:
        # JSON true is an int to Python; refuse it wherever a number is wanted.
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            raise TypeError(f"expected {kind.__name__}")
        return value

    return hook


for _kind in (str, int, bool):
    converter.register_structure_hook(_kind, _strict(_kind))


def _structure_str_enum(value: Any, tp: type[enum.StrEnum]) -> enum.StrEnum:
    if not isinstance(value, str):
        raise TypeError("expected a string")
    return tp(value)


# cattrs dispatches on the class first, so the str hook above would also catch
# StrEnum subclasses; this more specific hook puts the value check back.
converter.register_structure_hook(enum.StrEnum, _structure_str_enum)


def parse_timestamp(value: Any, _type: Any = datetime) -> datetime:
    """An ISO 8601 timestamp with an offset, normalised to UTC."""
    if not isinstance(value, str):
        raise TypeError("expected a string")
    parsed = datetime.fromisoformat(value)
    if parsed.tzinfo is None:
        raise ValueError("timestamp without a time zone")
    return parsed.astimezone(UTC)


converter.register_structure_hook(datetime, parse_timestamp)


def maybe_timestamp(value: datetime | None) -> str | None:
    """:func:`format_timestamp`, passing None through."""
    return None if value is None else format_timestamp(value)


def camel(name: str) -> str:
    """``expires_at`` -> ``expiresAt``."""
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def describe(tp: Any) -> str:
    """What a JSON value of type ``tp`` must be, for error messages."""
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        text = " or ".join(describe(a).removeprefix("must be ") for a in inner)
        return f"must be {text}" + (" or null" if len(inner) < len(args) else "")
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return "must be one of: " + ", ".join(str(m.value) for m in tp)
    if origin in (tuple, list):
        item = describe(args[0]).removeprefix("must be ")
        return f"must be an array whose items are {item}"
    if origin in (dict, Mapping) or tp is dict:
        return "must be an object with string values"
    if attrs.has(tp):
        names = ", ".join(camel(f.name) for f in attrs.fields(tp))
        return f"must be an object with the fields {names}"
    return {
        str: "must be a string",
        int: "must be an integer",
        bool: "must be true or false",
        datetime: "must be an ISO 8601 timestamp with a time zone",
    }.get(tp, "has the wrong type")


def _shape_ok(raw: Any, tp: Any) -> bool:
    # cattrs would happily iterate a string into a tuple of characters.
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return raw is None or any(_shape_ok(raw, a) for a in typing.get_args(tp))
    if origin in (tuple, list):
        return isinstance(raw, list)
    if origin in (dict, Mapping) or attrs.has(tp):
        return isinstance(raw, dict)
    return True


def _nested_type(tp: Any) -> Any:
    """The attrs class of a field typed ``X | None``."""
    return next(a for a in (tp, *typing.get_args(tp)) if attrs.has(a))


_FIELDS: dict[Any, dict[str, Any]] = {}


def _json_fields(cls: Any) -> dict[str, Any]:
    """A request class's fields by their JSON names: worked out once, not per request."""
    fields = _FIELDS.get(cls)
    if fields is None:
        fields = {camel(f.name): f for f in attrs.fields(attrs.resolve_types(cls))}
        _FIELDS[cls] = fields
    return fields


def structure_request(cls: type[T], data: Any) -> T:
    """Build ``cls`` from a JSON object, or raise ValidationError naming every bad field."""
    if not isinstance(data, dict):
        raise InvalidJson("Request body must be a JSON object")
    fields = _json_fields(cls)
    errors = [FieldError(str(key), "is not a known field") for key in data if key not in fields]
    values: dict[str, Any] = {}
    for json_name, field in fields.items():
        if json_name not in data:
            if field.default is attrs.NOTHING:
                errors.append(FieldError(json_name, "is required"))
            continue
        raw = data[json_name]
        if field.metadata.get(NESTED) and isinstance(raw, dict):
            try:
                values[field.name] = structure_request(_nested_type(field.type), raw)
            except ValidationError as exc:
                errors += [FieldError(f"{json_name}.{e.field}", e.message) for e in exc.details]
            continue
        try:
            if not _shape_ok(raw, field.type):
                raise TypeError("wrong shape")
            value = converter.structure(raw, field.type)
        except Exception:
            errors.append(FieldError(json_name, describe(field.type)))
            continue
        if field.validator is not None:
            try:
                field.validator(None, field, value)
            except ValueError as exc:
                errors.append(FieldError(json_name, str(exc)))
                continue
        values[field.name] = value
    if errors:
        raise ValidationError(errors)
    return cls(**values)
