"""pushctl accounts: the operator's view of accounts (plans)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from pushcore.converter import format_timestamp
from pushcore.domain.model import Account, Plan
from pushcore_cli import output
from pushcore_cli.commands import check_account, state_of

app = typer.Typer(
    help="Manage accounts and their plans.\n\nExample: pushctl accounts set-plan alice pro",
    no_args_is_help=True,
)


def account_json(account: Account) -> dict[str, Any]:
    """An account as JSON, in the API's conventions (camelCase, ISO timestamps)."""
    return {
        "id": account.id,
        "plan": account.plan.value,
        "createdAt": format_timestamp(account.created_at),
    }


@app.command("set-plan")
def set_plan(
    ctx: typer.Context,
    account: Annotated[
        str, typer.Argument(metavar="ACCOUNT", help="The account id; created if never seen.")
    ],
    plan: Annotated[Plan, typer.Argument(metavar="PLAN", help="The new plan: free or pro.")],
    json_output: output.JsonOption = False,
) -> None:
    """Change ACCOUNT's plan (free: up to 3 streams, pro: unlimited).

    Example: pushctl accounts set-plan alice pro
    """
    check_account(account, "'ACCOUNT'")
    updated = state_of(ctx).services.accounts.set_plan(account, plan)
    if json_output:
        output.print_json(account_json(updated))
        return
    output.print_record(
        [
            ("id", updated.id),
            ("plan", updated.plan.value),
            ("created", output.when(updated.created_at)),
        ]
    )
