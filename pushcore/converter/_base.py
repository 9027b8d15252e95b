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


def _nested_type(tp: Any) -> Any:
    """The attrs class of a field typed ``X | None``."""
    return next(a for a in (tp, *typing.get_args(tp)) if attrs.has(a))


def _shape_check(tp: Any) -> Any:
    """Whether a raw value has the shape ``tp`` needs (cattrs would happily iterate a
    string into a tuple of characters): a predicate worked out once; None: any shape."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        checks = [_shape_check(a) for a in typing.get_args(tp)]
        if all(check is None for check in checks):
            return None
        return lambda raw: raw is None or any(c is None or c(raw) for c in checks)
    if origin in (tuple, list):
        return lambda raw: isinstance(raw, list)
    if origin in (dict, Mapping) or attrs.has(tp):
        return lambda raw: isinstance(raw, dict)
    return None


@attrs.frozen
class _Field:
    """How one JSON field of a request class is read: worked out once per class."""

    json_name: str
    name: str
    required: bool
    nested: Any  # the attrs class of a nested field (its errors named inside it), or None
    shape: Any  # a predicate on the raw value, or None (any shape)
    structure: Any  # the converter's hook for the field's type
    type: Any
    validator: Any
    attribute: Any  # the attrs field, which validators are given
    wrong_type: str  # the message for a value of the wrong type


_PLANS: dict[Any, tuple[dict[str, _Field], tuple[_Field, ...]]] = {}


def _plan(cls: Any) -> tuple[dict[str, _Field], tuple[_Field, ...]]:
    """A request class's fields by their JSON names, and in order: worked out once per
    class (hooks, shapes and messages included), not per request."""
    plan = _PLANS.get(cls)
    if plan is None:
        fields = tuple(
            _Field(
                camel(f.name),
                f.name,
                f.default is attrs.NOTHING,
                _nested_type(f.type) if f.metadata.get(NESTED) else None,
                _shape_check(f.type),
                converter.get_structure_hook(f.type),
                f.type,
                f.validator,
                f,
                describe(f.type),
            )
            for f in attrs.fields(attrs.resolve_types(cls))
        )
        plan = _PLANS[cls] = ({f.json_name: f for f in fields}, fields)
    return plan


def structure_request(cls: type[T], data: Any) -> T:
    """Build ``cls`` from a JSON object, or raise ValidationError naming every bad field."""
    if not isinstance(data, dict):
        raise InvalidJson("Request body must be a JSON object")
    by_name, fields = _plan(cls)
    unknown = [FieldError(str(key), "is not a known field") for key in data if key not in by_name]
    # A field's errors other than its validator's: missing, wrong type, nested fields.
    problems: dict[str, list[FieldError]] = {}
    values: dict[str, Any] = {}
    for field in fields:
        json_name = field.json_name
        if json_name not in data:
            if field.required:
                problems[json_name] = [FieldError(json_name, "is required")]
            continue
        raw = data[json_name]
        if field.nested is not None and isinstance(raw, dict):
            try:
                values[field.name] = structure_request(field.nested, raw)
            except ValidationError as exc:
                problems[json_name] = [
                    FieldError(f"{json_name}.{e.field}", e.message) for e in exc.details
                ]
            continue
        try:
            if field.shape is not None and not field.shape(raw):
                raise TypeError("wrong shape")
            values[field.name] = field.structure(raw, field.type)
        except Exception:
            problems[json_name] = [FieldError(json_name, field.wrong_type)]
    if unknown or problems:
        raise ValidationError(unknown + _field_errors(fields, values, problems))
    # The class runs every field's validator itself: a valid request is checked once.
    # Only when one refuses are they run again one by one, to name every bad field.
    try:
        return cls(**values)
    except ValueError:
        refused = _field_errors(fields, values, {})
        if refused:
            raise ValidationError(refused) from None
        raise


def _field_errors(
    fields: tuple[_Field, ...], values: dict[str, Any], problems: dict[str, list[FieldError]]
) -> list[FieldError]:
    """Every field's errors in the class's order: its ``problems``, else what its validator
    says against its value (a nested field's own fields were checked inside it)."""
    errors: list[FieldError] = []
    for field in fields:
        if field.json_name in problems:
            errors += problems[field.json_name]
        elif field.validator is not None and field.nested is None and field.name in values:
            try:
                field.validator(None, field.attribute, values[field.name])
            except ValueError as exc:
                errors.append(FieldError(field.json_name, str(exc)))
    return errors
