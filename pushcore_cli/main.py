"""The pushctl application: root options, the command tree, and the console entry point.

The tree is built from :data:`COMMANDS`. A run that names its command builds
only that one (:func:`command_asked`): Typer imports a command's module and
reads the signature of every function it registers, so the whole tree costs
about 0.2 s that ``pushctl send`` need not pay (docs/benchmarks.md, "Quick
start"). Help, completion and unknown names get the whole tree, as does
:data:`app` (the tests' and the docs' view of it).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from functools import cache
from typing import Annotated, Any

import typer

import pushcore
from pushcore_cli import plain_values
from pushcore_cli.commands import CliState
from pushcore_cli.errors import PushctlGroup
from pushcore_cli.global_options import GLOBAL_VALUE_OPTIONS, add_global_options

plain_values.install()


class RootGroup(PushctlGroup):
    """pushctl itself: maps errors (:class:`PushctlGroup`), and every command in it takes
    the global options before and after its name."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        add_global_options(self)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"pushctl {pushcore.__version__}")
        raise typer.Exit


def root(
    ctx: typer.Context,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """Settings and services are made lazily, when a command first needs them."""
    # The global options (--data-dir ...) have filled it in already, as they were parsed.
    state = ctx.ensure_object(CliState)
    ctx.call_on_close(state.close)


# The commands in the order help lists them: name, module under pushcore_cli.commands,
# and its attribute, a command function or a Typer group.
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("serve", "serve", "serve"),
    ("worker", "worker", "worker"),
    ("token", "tokens", "app"),
    ("login", "login", "login"),
    ("logout", "login", "logout"),
    ("account", "account", "app"),
    ("accounts", "accounts", "app"),
    ("keys", "keys", "app"),
    ("devices", "devices", "app"),
    ("send", "notifications", "send"),
    ("notifications", "notifications", "app"),
    ("streams", "streams", "app"),
    ("schedules", "schedules", "app"),
    ("gateways", "gateways", "app"),
    ("listen", "listen", "listen"),
    ("webhooks", "webhooks", "app"),
    ("events", "webhooks", "events"),
)


def build_app(only: str | None = None) -> typer.Typer:
    """The pushctl application: every command, or only the one named ``only``."""
    built = typer.Typer(
        name="pushctl",
        cls=RootGroup,
        help=(
            "Self-hosted push notifications: run the server and manage accounts, keys and"
            " devices on the same services it uses.\n\n"
            "Example: pushctl --data-dir ./data keys list --account alice"
        ),
        no_args_is_help=True,
        # A traceback here means a bug; its locals could include a secret key or token.
        pretty_exceptions_show_locals=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    built.callback()(root)
    for name, module, attribute in COMMANDS:
        if only is not None and name != only:
            continue
        found = getattr(importlib.import_module(f"pushcore_cli.commands.{module}"), attribute)
        if isinstance(found, typer.Typer):
            built.add_typer(found, name=name)
        else:
            built.command(name)(found)
    return built


def command_asked(args: Sequence[str]) -> str | None:
    """The command a command line names, when it is one of :data:`COMMANDS`; None for
    help, completion or a name pushctl does not have (those need the whole tree)."""
    values = iter(args)
    for arg in values:
        if arg in GLOBAL_VALUE_OPTIONS:
            next(values, None)  # its value, which could read as a command's name
        elif not arg.startswith("-"):
            return arg if any(arg == name for name, _, _ in COMMANDS) else None
    return None


@cache
def _whole_app() -> typer.Typer:
    return build_app()


def __getattr__(name: str) -> typer.Typer:
    # `app`, the whole tree, built on first use: main() builds only what it runs.
    if name == "app":
        return _whole_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """The ``pushctl`` console entry point."""
    build_app(command_asked(sys.argv[1:]))(prog_name="pushctl")


if __name__ == "__main__":
    main()
