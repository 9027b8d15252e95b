"""A command's options derived from the request type it sends (``pushcore.domain.inputs``).

Every field a command does not set by a parameter of its own becomes an
option, ``--field-name``, with the field's one line for people, so a new
optional field of a notification reaches ``pushctl send`` with no change
here. A field of a type no option can take (a mapping, a time) stops the
command from being declared until it takes a parameter of its own.
"""

from __future__ import annotations

import enum
import inspect
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, TypeVar

import attrs
import typer
from typer.models import ArgumentInfo, OptionInfo

from pushcore.converter import camel
from pushcore.domain import validation as v

F = TypeVar("F", bound=Callable[..., Any])

# What a derived option can hold: Typer parses these, and the client sends them as given
# (and bool, as a --flag/--no-flag pair).
PLAIN = (str, int)


def _flag(parameter: inspect.Parameter) -> str:
    """How a command's parameter is spelled on the command line (``--at``, ``TITLE``)."""
    for info in typing.get_args(parameter.annotation)[1:]:
        if isinstance(info, OptionInfo):
            names = [info.default, *(info.param_decls or ())]
            flag = next(n for n in names if isinstance(n, str) and n.startswith("-"))
            return flag.partition("/")[0]  # a --flag/--no-flag pair: the first
        if isinstance(info, ArgumentInfo) and info.metavar:
            return info.metavar
    return parameter.name


def _option(request: type[Any], field: attrs.Attribute[Any], hint: Any) -> inspect.Parameter:
    """The option of one field: its type without None, its flag and its help."""
    kinds = [t for t in typing.get_args(hint) or (hint,) if t is not type(None)]
    kind = kinds[0] if len(kinds) == 1 else None
    flag = "--" + field.name.replace("_", "-")
    if kind is bool:
        # --renotify/--no-renotify: neither given leaves the server's default.
        flag = f"{flag}/--no-{flag[2:]}"
    elif not (kind in PLAIN or (isinstance(kind, type) and issubclass(kind, enum.Enum))):
        raise TypeError(
            f"{request.__name__}.{field.name} ({hint}) has no command-line option of its"
            " own kind: give the command a parameter for it"
        )
    option = typer.Option(
        flag,
        help=v.short_help(field.metadata),
        # A URL field reads as one in --help, as the fields with their own options do.
        metavar="URL" if field.validator is v.http_url else None,
    )
    return inspect.Parameter(
        field.name,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        default=None,
        annotation=Annotated[kind | None, option],
    )


def field_options(request: type[Any], own: Mapping[str, str]) -> Callable[[F], F]:
    """A command whose ``**fields`` are an option per field of ``request`` not in ``own``.

    ``own`` maps the fields the command sets itself to its parameter that sets
    each. The options, the command's own and the derived, are listed in the
    fields' order; :func:`flags` names the option of each field.
    """

    def derive(command: F) -> F:
        signature = inspect.signature(command, eval_str=True)
        params = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
        by_name = {p.name: p for p in params}
        hints = typing.get_type_hints(request, include_extras=True)
        place: dict[str, tuple[int, inspect.Parameter]] = {}
        flags: dict[str, str] = {}
        for index, field in enumerate(attrs.fields(request)):
            if field.name in own:
                param = by_name[own[field.name]]
                place.setdefault(param.name, (index, param))
            else:
                param = _option(request, field, hints[field.name])
                place[param.name] = (index, param)
            flags[camel(field.name)] = _flag(param)
        first = min(i for i, p in enumerate(params) if p.name in place)
        rest = [p for p in params[first:] if p.name not in place]
        ordered = [p for _, p in sorted(place.values(), key=lambda pair: pair[0])]
        layout = [*params[:first], *ordered, *rest]
        command.__signature__ = signature.replace(parameters=layout)  # type: ignore[attr-defined]
        command.__field_flags__ = flags  # type: ignore[attr-defined]
        return command

    return derive


def flags(command: Callable[..., Any]) -> dict[str, str]:
    """The flag that sets each field of a :func:`field_options` command, by its API name."""
    found: dict[str, str] = getattr(command, "__field_flags__")  # noqa: B009
    return dict(found)
