"""pushctl token: JWTs signed with the configured HS256 secret, for self-hosters."""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime, timedelta
from typing import Annotated

import typer

from pushcore.converter import format_timestamp
from pushcore_cli import output
from pushcore_cli.commands import check_account, state_of
from pushcore_cli.durations import HELP as DURATION_HELP
from pushcore_cli.durations import duration_parser

app = typer.Typer(
    help="Issue user tokens (JWTs) for the HTTP API.\n\nExample: pushctl token issue alice",
    no_args_is_help=True,
)


def _expiry(token: str) -> datetime:
    # Read back the exp the issuer wrote rather than recomputing it, so the two
    # can never disagree by a rounding second.
    payload = token.split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return datetime.fromtimestamp(int(claims["exp"]), UTC)


@app.command("issue")
def issue(
    ctx: typer.Context,
    account: Annotated[
        str, typer.Argument(metavar="ACCOUNT", help="The account the token is for (its sub).")
    ],
    ttl: Annotated[
        timedelta,
        typer.Option(
            "--ttl",
            parser=duration_parser,
            metavar="DURATION",
            help=f"How long the token is valid: {DURATION_HELP}. Default: 1h.",
            show_default=False,
        ),
    ] = timedelta(hours=1),
    json_output: output.JsonOption = False,
) -> None:
    """Print a JWT for ACCOUNT on stdout, and nothing else.

    Example: export TOKEN=$(pushctl token issue alice --ttl 1h)
    """
    check_account(account, "'ACCOUNT'")
    if ttl <= timedelta(0):
        raise typer.BadParameter("must be longer than 0 seconds", param_hint="'--ttl'")
    # Only the secret: no database, and no data directory made up (see build_token_issuer).
    from pushcore.bootstrap import build_token_issuer

    token = build_token_issuer(state_of(ctx).settings).issue(account, ttl)
    if json_output:
        output.print_json({"token": token, "expiresAt": format_timestamp(_expiry(token))})
    else:
        typer.echo(token)
