"""Option values of plain types read without pydantic: most of a local send's start-up.

Typer (0.2x) coerces every value through a pydantic ``TypeAdapter`` built on
first use, which imports pydantic and builds one schema per option: about a
quarter of a local ``pushctl send`` (docs/benchmarks.md, "Quick start").
pushctl's options are strings, flags, paths and enums, whose values arrive
as the strings and booleans the parser made; :class:`PlainValue` returns
those as the adapter would. Any other value, and any value it cannot take
as it is (a refused choice, an empty path), goes to Typer's own coercion,
so results and messages are Typer's. A Typer without this machinery (older
versions coerce through click, without pydantic) is left as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, get_args, get_origin

try:
    from typer._coercion import RuntimeParam, TypeDescriptor, build_runtime_param
    from typer._param_types import coerce_cli_choice, coerce_cli_path
    from typer.core import _TyperParameter
except ImportError:  # pragma: no cover - a Typer that coerces through click
    RuntimeParam = None  # type: ignore[assignment,misc]


def _is_plain(descriptor: Any) -> bool:
    kind, info = descriptor.annotation, descriptor.parameter_info
    if descriptor.file_annotation is not None:
        return False
    if info.parser is not None or kind in (str, bool, Path) or get_args(kind) == (str,):
        return get_origin(kind) in (None, list)
    return isinstance(kind, type) and issubclass(kind, Enum)


if RuntimeParam is not None:

    @dataclass(frozen=True)
    class PlainValue(RuntimeParam):
        """A string, flag, path, list of strings, enum or parsed value, as Typer's adapter
        makes it."""

        descriptor: TypeDescriptor

        def _coerce_value(self, value: Any, param: _TyperParameter, ctx: Any) -> Any:
            try:
                done = self._plain(value, param, ctx)
            except Exception:
                done = None
            if done is not None:
                return done
            # Typer's own coercion: its result, or its message for a refused value.
            typer_own = build_runtime_param(self.descriptor)
            param._runtime_param = typer_own
            return typer_own._coerce_value(value, param=param, ctx=ctx)

        def _plain(self, value: Any, param: _TyperParameter, ctx: Any) -> Any:
            kind, info = self.annotation, self.parameter_info
            if info.parser is not None:
                return info.parser(value)
            if kind is str or kind is bool:
                return value if type(value) is kind else None
            if get_origin(kind) is list:  # type: ignore[comparison-overlap]
                plain = isinstance(value, list | tuple) and all(type(v) is str for v in value)
                return list(value) if plain else None
            if kind is Path:
                if type(value) is not str or not value or info.path_type is not None:
                    return None
                return coerce_cli_path(Path(value), info, path_type=Path, param=param, ctx=ctx)
            return coerce_cli_choice(
                value, choices=list(kind), case_sensitive=info.case_sensitive, ctx=ctx
            )


def install() -> None:
    """Read the values of plain options without pydantic, in this process (once)."""
    if RuntimeParam is None or getattr(_TyperParameter, "_plain_values", False):
        return  # pragma: no cover
    typer_own = _TyperParameter.get_runtime_param

    def get_runtime_param(self: _TyperParameter) -> RuntimeParam:
        if self._runtime_param is None and _is_plain(self.type_descriptor):
            descriptor = self.type_descriptor
            self._runtime_param = PlainValue(
                descriptor.parameter_info, descriptor.annotation, descriptor
            )
        return typer_own(self)

    _TyperParameter.get_runtime_param = get_runtime_param  # type: ignore[method-assign]
    _TyperParameter._plain_values = True  # type: ignore[attr-defined]
