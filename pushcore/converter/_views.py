"""Response views: attrs classes that are the API's JSON, for the server and the client.

A view's attributes are snake_case and its timestamps aware datetimes; the
hooks registered here make ``converter.unstructure(view)`` the exact JSON the
API sends (camelCase keys, ``Z`` timestamps with milliseconds) and
``converter.structure(json, View)`` read it back. The server builds views from
domain objects and the client parses answers into them, so the two sides
cannot drift apart.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from datetime import datetime
from typing import Any, ClassVar, TypeVar

import attrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from pushcore.converter._base import camel, converter
from pushcore.domain.timefmt import format_timestamp
from pushcore.domain.validation import about

V = TypeVar("V", bound="View")

# Field metadata: the JSON name where camel() of the attribute is not it, and
# fields left out of the JSON (rather than written as null) when they are None.
JSON_NAME = "pushcore_json_name"
OMIT_IF_NONE = "pushcore_omit_if_none"


class View:
    """Base of every response view; marks the classes the JSON hooks apply to."""

    __slots__ = ()


def ident(prefix: str, what: str) -> dict[str, Any]:
    """Field metadata of an id: opaque, with a type prefix, sorting by creation."""
    return about(
        f"The {what}'s id: opaque, prefixed `{prefix}_`, sorts by creation.",
        example=f"{prefix}_01JD3V6Q5X8ZK2M4N7P9R0S1T2",
    )


def count(description: str) -> dict[str, Any]:
    """Field metadata of a count (never negative)."""
    return about(description, minimum=0)


CREATED = about("Creation time.")


def _overrides(cls: type[Any]) -> dict[str, Any]:
    return {
        f.name: override(
            rename=f.metadata.get(JSON_NAME, camel(f.name)),
            omit_if_default=f.metadata.get(OMIT_IF_NONE, False),
        )
        for f in attrs.fields(cls)
    }


def _is_view(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, View) and attrs.has(tp)


def _unstructure_factory(cls: type[Any]) -> Callable[[Any], dict[str, Any]]:
    return make_dict_unstructure_fn(cls, converter, **_overrides(cls))


def _structure_factory(cls: type[Any]) -> Callable[[Any, Any], Any]:
    # A field the server adds later must not break an older client.
    fn = make_dict_structure_fn(cls, converter, _cattrs_forbid_extra_keys=False, **_overrides(cls))

    def structure(value: Any, tp: Any) -> Any:
        if not isinstance(value, dict):
            raise TypeError(f"expected a JSON object for {cls.__name__}")
        return fn(value, tp)

    return structure


converter.register_unstructure_hook_factory(_is_view, _unstructure_factory)
converter.register_structure_hook_factory(_is_view, _structure_factory)
converter.register_unstructure_hook(datetime, format_timestamp)
# JSON has no tuples and no enums: arrays and the enum's value.
converter.register_unstructure_hook(tuple, lambda value: [converter.unstructure(v) for v in value])
# StrEnum too: cattrs would otherwise take its str base and pass the member through.
converter.register_unstructure_hook(enum.Enum, lambda member: member.value)
converter.register_unstructure_hook(enum.StrEnum, lambda member: member.value)


def copy_fields(cls: type[V], source: object, **given: Any) -> V:
    """A ``cls`` whose attributes not ``given`` are ``source``'s attributes of the same name."""
    # Views name their attributes as the domain does, so most factories are this.
    names = _NAMES.get(cls)
    if names is None:
        names = _NAMES[cls] = tuple(f.name for f in attrs.fields(cls))  # type: ignore[arg-type]
    if not given:
        # A batch's answer makes 500 views: no per-call filtering when nothing is given.
        return cls(**{name: getattr(source, name) for name in names})
    return cls(**{name: getattr(source, name) for name in names if name not in given}, **given)


# Each view's attribute names, worked out once per class (copy_fields).
_NAMES: dict[type[Any], tuple[str, ...]] = {}


def to_json(view: View) -> dict[str, Any]:
    """The JSON object of ``view`` (dicts, lists and scalars, ready for json.dumps)."""
    data: dict[str, Any] = converter.unstructure(view)
    return data


def json_of(cls: type[View], source: object) -> dict[str, Any]:
    """``to_json(copy_fields(cls, source))``, without the view in between.

    A view's unstructure code, which cattrs generates once per class, reads the
    view's attributes by name; ``source`` has them under the same names, so the code
    reads them off ``source`` itself. For a view that converts nothing it is given
    (checked once per class), that is the same JSON, less a view made and let go
    (a batch's answer made 500). tests/unit/test_converter.py holds them equal.
    """
    unstructure = _DIRECT.get(cls)
    if unstructure is None:
        fields = attrs.fields(cls)  # type: ignore[arg-type]
        converting = [f.name for f in fields if f.converter is not None]
        if converting:
            raise TypeError(f"{cls.__name__} converts {converting}: make the view")
        unstructure = _DIRECT[cls] = converter.get_unstructure_hook(cls)
    data: dict[str, Any] = unstructure(source)
    return data


# Each view's unstructure code, for json_of (worked out once per class).
_DIRECT: dict[type[Any], Callable[[Any], Any]] = {}


def from_json(data: Any, cls: type[V]) -> V:
    """Read a view of type ``cls`` back from the JSON the API sent."""
    return converter.structure(data, cls)


@attrs.frozen
class DeletedView(View):
    """What removing a key, device, stream or subscription answers: `{success: true, id}`."""

    schema_name: ClassVar[str] = "Success"

    success: bool = attrs.field(metadata=about(const=True))
    id: str = attrs.field(metadata=about("The id from the path."))

    @classmethod
    def of(cls, resource_id: str) -> DeletedView:
        """The answer to a successful removal of ``resource_id``."""
        return cls(True, resource_id)
