"""A call builder's keyword arguments, derived from the request type it sends.

The request types (:mod:`pushcore.domain.inputs`) declare each field once,
with its words for people. A builder names what it takes positionally and
gets every other field of its request type as a keyword argument, so a new
optional field reaches the client with no change here: ``help()``,
:func:`inspect.signature` and IDEs see the derived parameters
(``__signature__``), and a keyword the type has no field for is a TypeError
that names the valid ones.

Type checkers see ``**fields: Any``: a declaration they could check (a
TypedDict, a stub) would be a second list of the fields to keep in step.
"""

from __future__ import annotations

import enum
import functools
import inspect
import operator
import types
import typing
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, ParamSpec, TypeVar

import attrs

from pushcore.domain.validation import short_help

P = ParamSpec("P")
T = TypeVar("T")


def loose(hint: Any) -> Any:
    """What the client takes for a field of type ``hint``: the value, the API's spelling
    of it (an enum's value, an ISO 8601 time, any mapping), or None for the server's
    default."""
    union = typing.get_origin(hint) in (typing.Union, types.UnionType)
    parts: list[Any] = []
    for part in typing.get_args(hint) if union else (hint,):
        if part is type(None):
            continue
        if isinstance(part, type) and issubclass(part, enum.Enum | datetime):
            parts += [part, str]
        elif attrs.has(part):
            # An object field (deliverAt) also as a dict with the API's names.
            parts += [part, Mapping[str, str | None]]
        elif typing.get_origin(part) is dict:
            parts.append(Mapping[typing.get_args(part)])  # type: ignore[misc]
        else:
            parts.append(part)
    return functools.reduce(operator.or_, [*dict.fromkeys(parts), None])


def keywords(request: type[Any]) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """A builder whose ``**fields`` are the fields of ``request`` it does not name itself."""

    def derive(build: Callable[P, T]) -> Callable[P, T]:
        own = inspect.signature(build, eval_str=True)
        named = [p for p in own.parameters.values() if p.kind is not p.VAR_KEYWORD]
        taken = {p.name for p in named}
        hints = typing.get_type_hints(request)
        fields = [a for a in attrs.fields(request) if a.name not in taken]
        derived = [
            inspect.Parameter(a.name, inspect.Parameter.KEYWORD_ONLY, default=None).replace(
                annotation=loose(hints[a.name])
            )
            for a in fields
        ]
        valid = frozenset(p.name for p in derived)
        every = ", ".join(p.name for p in [*named, *derived])

        @functools.wraps(build)
        def checked(*args: P.args, **kwargs: P.kwargs) -> T:
            unknown = sorted(kwargs.keys() - valid - taken)
            if unknown:
                raise TypeError(
                    f"{build.__name__}() got an unexpected keyword argument {unknown[0]!r}"
                    f" (it takes {every})"
                )
            return build(*args, **kwargs)

        checked.__signature__ = own.replace(parameters=[*named, *derived])  # type: ignore[attr-defined]
        words = "\n".join(f"    {a.name}: {short_help(a.metadata)}" for a in fields)
        heading = "Keyword arguments (None: the server's default):"
        checked.__doc__ = f"{build.__doc__}\n\n{heading}\n{words}"
        return checked

    return derive
