"""pushctl login / logout: a person's session on a server, kept for later --url commands."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from pushcore.domain.errors import PushcoreError
from pushcore_cli import output
from pushcore_cli.commands import state_of
from pushcore_cli.sessions import SessionFile


def _server(ctx: typer.Context, command: str) -> str:
    url = state_of(ctx).url or SessionFile().current()
    if url is None:
        raise typer.BadParameter(
            f"{command} signs in to a server: give its address with --url (or PUSHCORE_URL)",
            param_hint="'--url'",
        )
    return url


def _password(from_stdin: bool) -> str:
    if from_stdin:
        # One line, its newline removed: `printf '%s\n' "$PW" | pushctl login ...`.
        return sys.stdin.readline().rstrip("\r\n")
    if not sys.stdin.isatty():
        raise typer.BadParameter(
            "no terminal to ask for the password on: pipe it with --password-stdin",
            param_hint="'--password-stdin'",
        )
    password: str = typer.prompt("Password", hide_input=True)
    return password


def login(
    ctx: typer.Context,
    account: Annotated[str, typer.Argument(metavar="ACCOUNT", help="The account to sign in as.")],
    password_stdin: Annotated[
        bool,
        typer.Option("--password-stdin", help="Read the password from the first line of stdin."),
    ] = False,
    json_output: output.JsonOption = False,
) -> None:
    """Sign in to the server at --url and keep the session for later commands.

    The session is saved in your config directory (mode 0600) and renewed by
    itself; later commands without --url or --account work on that server as
    ACCOUNT, until `pushctl logout`. Example: pushctl login --url
    https://push.example.com alice, then pushctl streams subscribe falcon-7k2q.
    """
    url = _server(ctx, "login")
    sessions = SessionFile()
    password = _password(password_stdin)
    from pushcore.client import Client

    with sessions.locked():
        client = Client.login(
            url, account, password, on_change=lambda t: sessions.save(url, t, current=True)
        )
    client.close()
    signed_in = client.session.tokens.account if client.session is not None else account
    if json_output:
        output.print_json({"account": signed_in, "url": url, "file": str(sessions.path)})
        return
    output.say(
        f"Signed in to {url} as {signed_in}; the session is kept in {sessions.path}."
        " Commands without --url or --account now work on that server; pushctl logout ends it."
    )


def logout(ctx: typer.Context) -> None:
    """End the session kept for the server at --url (else the last login's): revoked
    there, removed here.

    Example: pushctl logout --url https://push.example.com
    """
    url = _server(ctx, "logout")
    sessions = SessionFile()
    with sessions.locked():
        tokens = sessions.remove(url)
    if tokens is None:
        output.say(f"Not signed in to {url}")
        return
    from pushcore.client import Client, Session

    try:
        with Client(url, session=Session(tokens), retries=1) as client:
            client.logout()
    except PushcoreError as exc:
        # Removed here all the same: the refresh token expires on its own.
        output.warn(f"the server could not be told ({exc}); the session is removed here")
    output.say(f"Signed out of {url}")
