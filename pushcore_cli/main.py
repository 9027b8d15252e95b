"""The pushctl application: root options, the command tree, and the console entry point."""

from __future__ import annotations

from typing import Annotated, Any

import typer

import pushcore
from pushcore_cli.commands import (
    CliState,
    accounts,
    devices,
    gateways,
    keys,
    listen,
    login,
    notifications,
    serve,
    streams,
    tokens,
    worker,
)
from pushcore_cli.errors import PushctlGroup
from pushcore_cli.global_options import add_global_options


class RootGroup(PushctlGroup):
    """pushctl itself: maps errors (:class:`PushctlGroup`), and every command in it takes
    the global options before and after its name."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        add_global_options(self)


app = typer.Typer(
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


def _version(value: bool) -> None:
    if value:
        typer.echo(f"pushctl {pushcore.__version__}")
        raise typer.Exit


@app.callback()
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


app.command("serve")(serve.serve)
app.command("worker")(worker.worker)
app.add_typer(tokens.app, name="token")
app.command("login")(login.login)
app.command("logout")(login.logout)
app.add_typer(accounts.app, name="accounts")
app.add_typer(keys.app, name="keys")
app.add_typer(devices.app, name="devices")
app.command("send")(notifications.send)
app.add_typer(notifications.app, name="notifications")
app.add_typer(streams.app, name="streams")
app.add_typer(gateways.app, name="gateways")
app.command("listen")(listen.listen)


def main() -> None:
    """The ``pushctl`` console entry point."""
    app(prog_name="pushctl")


if __name__ == "__main__":
    main()
