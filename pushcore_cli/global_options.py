"""The options that say where and as whom pushctl works, accepted before and after the command name.

``pushctl --data-dir D serve`` and ``pushctl serve --data-dir D`` are the
same. The options are declared once (:func:`_declarations`), and
:func:`add_global_options` gives a copy of them to every command of the tree.
None of them reaches a command's function: each one records its value in the
root's :class:`~pushcore_cli.commands.CliState` as it is parsed, and the
commands read them there.

A value given on the command line wins over the environment variable. Given
on the command line both before and after the command name, the two must
agree: different values are a usage error, since either choice would
silently ignore something the user typed.
"""

from __future__ import annotations

import copy
import inspect
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

import typer
from typer.core import TyperGroup, TyperOption

from pushcore_cli.commands import CliState

PANEL = "Global options (before or after the command name)"


def _declarations(
    data_dir: Annotated[
        Path | None,
        typer.Option(
            "--data-dir",
            envvar="PUSHCORE_DATA_DIR",
            file_okay=False,
            help="Where the SQLite database and generated secrets live. Default: ./data.",
        ),
    ] = None,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            envvar="PUSHCORE_CONFIG",
            dir_okay=False,
            help="A TOML settings file (environment variables win over it).",
        ),
    ] = None,
    database_url: Annotated[
        str | None,
        typer.Option(
            "--database-url",
            envvar="PUSHCORE_DATABASE_URL",
            help="sqlite:///path, postgresql://... or memory://. Default: SQLite in --data-dir.",
        ),
    ] = None,
    url: Annotated[
        str | None,
        typer.Option(
            "--url",
            envvar="PUSHCORE_URL",
            help="Work on this pushcore server's HTTP API instead of the local data"
            " (keys, devices, send, notifications, streams, listen).",
        ),
    ] = None,
    api_key: Annotated[
        str | None,
        typer.Option(
            "--api-key",
            envvar="PUSHCORE_API_KEY",
            help="With --url: the API key to authenticate with (sent as X-API-Key).",
        ),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar="PUSHCORE_TOKEN",
            help="With --url: the user token (JWT) to authenticate with (sent as Bearer).",
        ),
    ] = None,
) -> None:
    """Only its signature is used: the global options, declared the way Typer reads them."""


# Every global option takes a value, and its flag is its parameter's name: what
# pushctl's entry point skips, with the value after it, to find the command's name
# before the tree is built (main.command_asked; tests/cli/test_global_options.py
# holds the two together).
GLOBAL_VALUE_OPTIONS = frozenset(
    "--" + name.replace("_", "-") for name in inspect.signature(_declarations).parameters
)


def _record(ctx: Any, param: Any, value: Any) -> None:
    """Keep an option's value in the root state (the click callback of every copy).

    ``ctx`` and ``param`` are the click context and option (typed ``Any``:
    Typer vendors click and does not export those types).
    """
    if value is None or param.name is None:
        return
    state = ctx.ensure_object(CliState)
    name = param.name
    if name == "url":
        _check_url(str(value), ctx, param)
    source = ctx.get_parameter_source(name)
    if source is not None and source.name == "COMMANDLINE":
        previous = state.given.get(name)
        if previous is not None and previous != value:
            raise typer.BadParameter(
                f"given twice with different values ({previous} and {value});"
                " give it once, before or after the command name",
                ctx=ctx,
                param=param,
            )
        state.given[name] = value
        state.set_option(name, value)
    elif name not in state.given:
        # From the environment (the same at every level): the command line wins over it.
        state.set_option(name, value)


def _check_url(url: str, ctx: Any, param: Any) -> None:
    """A usage error for a server address httpx would refuse with its own words
    (``localhost:8080`` reads as the scheme ``localhost``)."""
    parts = urlsplit(url)
    if parts.scheme in ("http", "https") and parts.netloc:
        return
    bare = url.removeprefix("//")
    suggestion = f"; did you mean http://{bare}?" if "://" not in url else ""
    raise typer.BadParameter(
        f"{url!r} is not a server address: it must begin with http:// or https://{suggestion}",
        ctx=ctx,
        param=param,
    )


def _global_params() -> list[TyperOption]:
    """Fresh options from :func:`_declarations`, recording into the state as they are parsed."""
    probe = typer.Typer(add_completion=False)
    probe.command()(_declarations)
    params = [p for p in typer.main.get_command(probe).params if isinstance(p, TyperOption)]
    for param in params:
        # Not passed to the command's function: _record keeps the value instead.
        param.expose_value = False
        param.callback = _record
        # Typer's help shows them in a panel of their own, with their variable.
        param.rich_help_panel = PANEL
        param.show_envvar = True
    return params


def _flags(command: Any) -> set[str]:
    return {flag for p in command.params for flag in (*p.opts, *p.secondary_opts)}


class _Flag(TyperOption):
    """An on/off option: its help shows no value to give (Typer 0.2x shows ``<bool>``)."""

    def display_type_rich(self, ctx: Any) -> str | None:
        """No type: a flag takes no value."""
        return None


def add_global_options(root: Any) -> None:
    """Give ``root`` and every command under it the global options.

    A command with an option of its own under the same flag keeps its own
    (``devices add --token`` is the device's token): there, the global one
    goes before the command name or in its environment variable.
    """
    params = _global_params()
    commands = [root]
    while commands:
        command = commands.pop()
        taken = _flags(command)
        command.params.extend(copy.copy(p) for p in params if not taken.intersection(p.opts))
        for param in command.params:
            if isinstance(param, TyperOption) and param.is_flag and not param.count:
                param.__class__ = _Flag
        if isinstance(command, TyperGroup):
            commands.extend(command.commands.values())
