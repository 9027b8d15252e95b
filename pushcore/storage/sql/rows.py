"""Entities <-> rows, derived from each entity's attrs declaration.

A table is declared as the attrs class it stores (``storage/records.py``, a
line or two a table). Each field's columns and codec follow from its type:

- ``str`` and ``int``: the value as it is;
- ``bool``: the value, read back with ``bool()`` (SQLite holds 0 and 1);
- ``datetime``: the database's time (``time`` / ``read_time``);
- an enum: its value, read back through a table of its members;
- ``Mapping[str, str]``: the database's JSON object (``json`` / ``read_json``);
- ``tuple[Scope, ...]``: the database's scope list (``scopes`` / ``read_scopes``);
- an attrs class: spread over a column per field of its own, named
  ``<field>_<its field>`` (``stream_id``, ``keys_auth``), all NULL for None;
- ``X | None``: X, or NULL.

A table says only where its row differs from the entity: a column of another
name (``columns=``), a codec of its own (``codecs=``). The database's own way
of holding a time, a JSON object and a scope list stays with its dialect; the
mapping is given those :class:`Primitives` and, once per dialect, generates
and compiles Python source for the table (as attrs and cattrs do for their
classes): an encoder (entity -> values in column order, or by column name)
and a decoder (row -> entity), so a row costs its expressions and no dispatch
per field.
"""

from __future__ import annotations

import enum
import linecache
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar

import attrs

from pushcore.domain.scopes import Scope

T = TypeVar("T")


class Primitives(Protocol):
    """How one database holds the values its driver does not take as they are (a dialect)."""

    def time(self, at: datetime) -> Any:
        """A time as the database holds it."""
        ...

    def read_time(self, value: Any) -> datetime:
        """A time as the database gave it, back as an aware datetime."""
        ...

    def json(self, value: Mapping[str, str]) -> Any:
        """A JSON object of strings as the database holds it."""
        ...

    def read_json(self, value: Any) -> Mapping[str, str]:
        """A JSON object as the database gave it."""
        ...

    def scopes(self, values: list[str]) -> Any:
        """Scope values, in their order, as the database holds them."""
        ...

    def read_scopes(self, value: Any) -> list[str]:
        """Scope values as the database gave them."""
        ...


_PRIMITIVES = ("time", "read_time", "json", "read_json", "scopes", "read_scopes")


@attrs.frozen
class Codec:
    """How a value is held in one column.

    ``kind`` is the column's type by meaning (``text``, ``int``, ``bool``, ``time``,
    ``json``, ``scopes``; what :meth:`Dialect.table` takes); ``write`` and ``read``
    are Python expressions with ``{}`` for the value, in terms of the
    :class:`Primitives` and of the names ``env`` gives.
    """

    kind: str
    write: str = "{}"
    read: str = "{}"
    env: Mapping[str, object] = attrs.field(factory=dict)


TEXT, INT = Codec("text"), Codec("int")
BOOL = Codec("bool", read="bool({})")
TIME = Codec("time", "time({})", "read_time({})")
JSON = Codec("json", "json({})", "read_json({})")


def enum_codec(cls: type[enum.Enum]) -> Codec:
    """An enum member held as its value; read back by a dict lookup, quicker than ``cls(v)``."""
    members = f"_{cls.__name__}"
    kind = "int" if all(isinstance(m.value, int) for m in cls) else "text"
    # ``_value_``, the member's own attribute: ``.value`` is a descriptor call in Python
    # (seven a notification row, a fifth of its encoding's time).
    return Codec(kind, "{}._value_", f"{members}[{{}}]", {members: {m.value: m for m in cls}})


SCOPES = Codec(
    "scopes",
    "scopes([s.value for s in {}])",
    "tuple([_Scope[s] for s in read_scopes({})])",
    enum_codec(Scope).env,
)


def codec_of(tp: Any) -> Codec:
    """The codec of a field of type ``tp`` (None already taken off); TypeError if none fits."""
    if tp in (str, int, bool, datetime):
        return {str: TEXT, int: INT, bool: BOOL, datetime: TIME}[tp]
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return enum_codec(tp)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (Mapping, dict) and args == (str, str):
        return JSON
    if origin is tuple and args == (Scope, ...):
        return SCOPES
    raise TypeError(f"no column codec for {tp!r}")


def _without_none(tp: Any) -> tuple[bool, Any]:
    """(whether ``tp`` admits None, ``tp`` without None)."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        rest = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(rest) == 1:
            return len(rest) < len(typing.get_args(tp)), rest[0]
    return False, tp


@attrs.frozen
class Field:
    """One attribute of an entity and the columns that hold it."""

    name: str
    columns: tuple[str, ...]
    codecs: tuple[Codec, ...]
    optional: bool
    # An attrs class spread over the columns, one per attribute (``parts``), or None.
    nested: type | None = None
    parts: tuple[str, ...] = ()


def _field(
    cls: type, attribute: attrs.Attribute[Any], tp: Any, column: str, codec: Codec | None
) -> Field:
    optional, tp = _without_none(tp)
    where = f"{cls.__name__}.{attribute.name}"
    if codec is not None:
        return Field(attribute.name, (column,), (codec,), optional)
    if not attrs.has(tp):
        try:
            return Field(attribute.name, (column,), (codec_of(tp),), optional)
        except TypeError as exc:
            raise TypeError(f"{where}: {exc}; give it a codec in its table") from None
    hints = typing.get_type_hints(tp)
    parts = tuple(a.name for a in attrs.fields(tp))
    for part in parts:
        # NULL in the first column is how an absent value reads back.
        if _without_none(hints[part])[0] or attrs.has(hints[part]):
            raise TypeError(f"{where}: {tp.__name__}.{part} must be a plain value to be spread")
    codecs = tuple(codec_of(hints[part]) for part in parts)
    columns = tuple(f"{column}_{part}" for part in parts)
    return Field(attribute.name, columns, codecs, optional, tp, parts)


def fields_of(
    cls: type, columns: Mapping[str, str], codecs: Mapping[str, Codec]
) -> tuple[Field, ...]:
    """The fields of attrs class ``cls`` with their columns, by type and the overrides."""
    attributes = attrs.fields(cls)
    unknown = (set(columns) | set(codecs)) - {a.name for a in attributes}
    if unknown:
        raise TypeError(f"{cls.__name__} has no field {', '.join(sorted(unknown))}")
    hints = typing.get_type_hints(cls)
    if not all(a.init for a in attributes):
        raise TypeError(f"{cls.__name__}: every field must be an __init__ argument")
    return tuple(
        _field(cls, a, hints[a.name], columns.get(a.name, a.name), codecs.get(a.name))
        for a in attributes
    )


@attrs.frozen
class RowCodec(Generic[T]):
    """Rows of one table (or part of one) on one database: functions compiled once.

    ``encode`` gives the values to bind in column order (positional
    parameters bind quickest), ``params`` the same by column name; ``decode``
    reads a row (values in column order) back into the entity, and ``merge``
    gives an entity whose fields of this part are read from a row, the others
    kept. ``source`` is the generated code, for reading.
    """

    encode: Callable[[T], tuple[Any, ...]]
    params: Callable[[T], dict[str, Any]]
    decode: Callable[[Sequence[Any]], T]
    merge: Callable[[T, Sequence[Any]], T]
    source: str


class Columns(Generic[T]):
    """Fields of an entity as columns: a table's whole row, or a part of it."""

    def __init__(self, label: str, cls: type[T], fields: Sequence[Field]) -> None:
        self.label = label
        self.cls = cls
        self.fields = tuple(fields)
        self.names: tuple[str, ...] = tuple(c for f in self.fields for c in f.columns)
        self.columns = ", ".join(self.names)
        self.kinds = [
            (c, codec.kind)
            for f in self.fields
            for c, codec in zip(f.columns, f.codecs, strict=True)
        ]
        self.placeholders = ", ".join("?" * len(self.names))
        self._compiled: dict[Primitives, RowCodec[T]] = {}

    def prefixed(self, alias: str) -> str:
        """The column list qualified by a table alias: ``d.id, d.account_id, ...``."""
        return ", ".join(f"{alias}.{c}" for c in self.names)

    def codec(self, primitives: Primitives) -> RowCodec[T]:
        """The encoder and decoder on these primitives (generated at the first call)."""
        compiled = self._compiled.get(primitives)
        if compiled is None:
            # Two threads may both generate it: the same functions, either kept.
            compiled = self._compiled[primitives] = _generate(self, primitives)
        return compiled


class Table(Columns[T]):
    """A table holding one attrs entity: one row per entity, a column per plain field."""

    def __init__(
        self,
        name: str,
        cls: type[T],
        *,
        columns: Mapping[str, str] | None = None,
        codecs: Mapping[str, Codec] | None = None,
    ) -> None:
        super().__init__(name, cls, fields_of(cls, columns or {}, codecs or {}))
        self.name = name
        # Only names declared in the code reach SQL text; values are bound.
        self.insert = f"INSERT INTO {name} ({self.columns}) VALUES ({self.placeholders})"  # noqa: S608

    def part(self, *names: str) -> Columns[T]:
        """These fields' columns, in this order (what an UPDATE writes, say)."""
        by_name = {f.name: f for f in self.fields}
        unknown = [n for n in names if n not in by_name]
        if unknown:
            raise TypeError(f"{self.cls.__name__} has no field {', '.join(unknown)}")
        return Columns(f"{self.name}({', '.join(names)})", self.cls, [by_name[n] for n in names])


def _writes(fields: Sequence[Field]) -> tuple[list[str], list[str]]:
    """Statements binding values used twice, and one expression per column, of entity ``e``."""
    lines, values = [], []
    for f in fields:
        held = f"e.{f.name}"
        if f.optional and (f.nested is not None or f.codecs[0].write != "{}"):
            lines.append(f"v_{f.name} = e.{f.name}")
            held = f"v_{f.name}"
        items = [f"{held}.{p}" for p in f.parts] if f.nested is not None else [held]
        for item, codec in zip(items, f.codecs, strict=True):
            value = codec.write.replace("{}", item)
            if f.optional and value != held:
                value = f"None if {held} is None else {value}"
            values.append(value)
    return lines, values


def _reads(fields: Sequence[Field]) -> dict[str, str]:
    """The expression of each field's value, from row values ``c0``, ``c1``... in order."""
    reads, i = {}, 0
    for f in fields:
        cells = [f"c{i + k}" for k in range(len(f.columns))]
        i += len(cells)
        values = [codec.read.replace("{}", c) for c, codec in zip(cells, f.codecs, strict=True)]
        if f.nested is None:
            value = values[0]
        else:
            named = ", ".join(
                f"{a.alias}={v}" for a, v in zip(attrs.fields(f.nested), values, strict=True)
            )
            value = f"_{f.nested.__name__}({named})"
        if f.optional and value != cells[0]:
            value = f"None if {cells[0]} is None else {value}"
        reads[f.name] = value
    return reads


def _call(cls: type, values: Mapping[str, str]) -> str:
    """``_cls(...)`` with ``values`` by attribute; positional where ``__init__`` takes it so."""
    args = [
        f"{a.alias}={values[a.name]}" if a.kw_only else values[a.name] for a in attrs.fields(cls)
    ]
    return f"_cls({', '.join(args)})"


def source_of(columns: Columns[Any]) -> str:
    """The Python source of a table's (or part's) encoder and decoder."""
    fields, cls = columns.fields, columns.cls
    lines, values = _writes(fields)
    prelude = "".join(f"    {line}\n" for line in lines)
    cells = "".join(f"c{i}, " for i in range(len(columns.names)))
    reads = _reads(fields)
    kept = {a.name: reads.get(a.name, f"e.{a.name}") for a in attrs.fields(cls)}
    if set(reads) == set(kept):
        decode = f"    ({cells}) = row\n    return {_call(cls, reads)}\n"
    else:
        decode = f"    raise TypeError({columns.label + ' is not every field'!r})\n"
    by_name = ", ".join(f"{n!r}: {v}" for n, v in zip(columns.names, values, strict=True))
    return (
        f"def encode(e):\n{prelude}    return ({''.join(v + ', ' for v in values)})\n\n"
        f"def params(e):\n{prelude}    return {{{by_name}}}\n\n"
        f"def decode(row):\n{decode}\n"
        f"def merge(e, row):\n    ({cells}) = row\n    return {_call(cls, kept)}\n"
    )


def _generate(columns: Columns[T], primitives: Primitives) -> RowCodec[T]:
    source = source_of(columns)
    namespace: dict[str, Any] = {name: getattr(primitives, name) for name in _PRIMITIVES}
    namespace["_cls"] = columns.cls
    for f in columns.fields:
        if f.nested is not None:
            namespace[f"_{f.nested.__name__}"] = f.nested
        for codec in f.codecs:
            for name, value in codec.env.items():
                if namespace.setdefault(name, value) != value:
                    raise TypeError(f"{columns.label}: two codecs name {name} differently")
    # A file name of its own, kept in linecache, so tracebacks show the generated lines.
    filename = f"<pushcore rows {columns.label} on {type(primitives).__name__}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102 (our field and column names)
    return RowCodec(
        namespace["encode"], namespace["params"], namespace["decode"], namespace["merge"], source
    )
