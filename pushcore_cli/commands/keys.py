"""pushctl keys: create (the secret is shown once), list masked, revoke."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated

import typer

from pushcore.converter import ApiKeyView, to_json
from pushcore.domain.scopes import Scope
from pushcore_cli import output
from pushcore_cli.commands import AccountOption, api_for
from pushcore_cli.durations import HELP as DURATION_HELP
from pushcore_cli.durations import duration_parser
from pushcore_cli.errors import naming_options

app = typer.Typer(
    help="Manage an account's API keys.\n\nExample: pushctl keys list --account alice",
    no_args_is_help=True,
)

SCOPES = ", ".join(s.value for s in Scope)


def _state(key: ApiKeyView, now: datetime) -> str:
    if not key.is_active:
        return "no (revoked)"
    if key.expires_at is not None and key.expires_at <= now:
        return "no (expired)"
    return "yes"


@app.command("create")
def create(
    ctx: typer.Context,
    name: Annotated[str, typer.Option("--name", help="A label to recognise the key by.")],
    scope: Annotated[
        list[str],
        typer.Option("--scope", metavar="SCOPE", help=f"Repeat for each scope: {SCOPES}."),
    ],
    expires_in: Annotated[
        timedelta | None,
        typer.Option(
            "--expires-in",
            parser=duration_parser,
            metavar="DURATION",
            help=f"Expire after this long: {DURATION_HELP}.",
        ),
    ] = None,
    expires_at: Annotated[
        str | None,
        typer.Option(
            "--expires-at",
            metavar="TIMESTAMP",
            help="Expire at this ISO 8601 time with an offset, e.g. 2027-01-01T00:00:00Z.",
        ),
    ] = None,
    account: AccountOption = None,
    json_output: output.JsonOption = False,
) -> None:
    """Create an API key and print it: the full key is shown this once only.

    Example: pushctl keys create --account alice --name ci --scope notifications:write
    """
    if expires_in is not None and expires_at is not None:
        raise typer.BadParameter(
            "give --expires-in or --expires-at, not both", param_hint="'--expires-at'"
        )
    options = {
        "name": "--name",
        "scopes": "--scope",
        "expiresAt": "--expires-in" if expires_in is not None else "--expires-at",
    }
    with naming_options(options):
        # An unreadable --expires-at goes as it is: refused with the other fields at once.
        expiry: datetime | str | None = expires_at
        if expires_in is not None:
            expiry = datetime.now(UTC) + expires_in
        api = api_for(ctx, account)
        key = api.client.keys.create(name, scope, expires_at=expiry)
    output.show(
        key,
        json_output,
        [
            ("id", key.id),
            ("name", key.name),
            ("key", key.key),
            ("scopes", ", ".join(s.value for s in key.scopes)),
            ("expires", output.when(key.expires_at)),
            ("created", output.when(key.created_at)),
        ],
    )
    output.warn("store this key now: it will not be shown again (only its hash is kept).")


@app.command("list")
def list_keys(
    ctx: typer.Context,
    account: AccountOption = None,
    json_output: output.JsonOption = False,
) -> None:
    """List the account's keys, masked to their prefix; revoked ones included.

    Example: pushctl keys list --account alice
    """
    api = api_for(ctx, account)
    keys = api.client.keys.list()
    if json_output:
        output.print_json([to_json(k) for k in keys])
        return
    if not keys:
        output.say(f"No API keys. Create one with: pushctl keys create{api.as_account} ...")
        return
    now = datetime.now(UTC)
    output.print_table(
        ["id", "name", "prefix", "scopes", "active", "last used", "created"],
        (
            [
                k.id,
                k.name,
                k.key_prefix,
                ", ".join(s.value for s in k.scopes),
                _state(k, now),
                output.when(k.last_used_at),
                output.when(k.created_at),
            ]
            for k in keys
        ),
    )


@app.command("revoke")
def revoke(
    ctx: typer.Context,
    key_id: Annotated[str, typer.Argument(metavar="KEY_ID", help="The key's id (key_...).")],
    account: AccountOption = None,
    json_output: output.JsonOption = False,
) -> None:
    """Revoke a key: it stops working at once and stays in the list. Revoking twice is fine.

    Example: pushctl keys revoke --account alice key_01JD0000000000000000000000
    """
    revoked = api_for(ctx, account).client.keys.revoke(key_id)
    output.show(revoked, json_output)
    output.say(f"Revoked API key {revoked.id}.")
