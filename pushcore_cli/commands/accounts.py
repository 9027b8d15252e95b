"""pushctl accounts: the operator's view of accounts (plans, passwords). Local only."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer

from pushcore.converter import format_timestamp, maybe_timestamp
from pushcore.domain.errors import AccountExists
from pushcore.domain.model import Account, Plan
from pushcore_cli import output
from pushcore_cli.commands import check_account, state_of

if TYPE_CHECKING:
    from pushcore.services import AccountSummary

app = typer.Typer(
    help="Manage accounts: passwords and plans.\n\n"
    "Example: pushctl accounts create alice --password-stdin < password.txt",
    no_args_is_help=True,
)

PasswordStdin = Annotated[
    bool,
    typer.Option(
        "--password-stdin",
        help="Read the password from stdin (one trailing newline is dropped) instead of"
        " asking twice on the terminal.",
    ),
]


def account_json(account: Account) -> dict[str, Any]:
    """An account as JSON, in the API's conventions (camelCase, ISO timestamps)."""
    return {
        "id": account.id,
        "plan": account.plan.value,
        "createdAt": format_timestamp(account.created_at),
    }


def _print_account(account: Account, json_output: bool) -> None:
    if json_output:
        output.print_json(account_json(account))
        return
    fields = [("id", account.id), ("plan", account.plan.value)]
    output.print_record([*fields, ("created", output.when(account.created_at))])


def on_terminal() -> bool:
    """Whether stdin is a terminal to ask on."""
    return sys.stdin.isatty()


def read_password(from_stdin: bool) -> str:
    """The new password: from stdin, or asked twice on the terminal (never echoed)."""
    if from_stdin:
        text = sys.stdin.read()
        return text[:-1] if text.endswith("\n") else text
    if not on_terminal():
        raise typer.BadParameter(
            "no terminal to ask for the password on: give it on stdin",
            param_hint="--password-stdin",
        )
    password: str = typer.prompt("Password", hide_input=True, confirmation_prompt=True)
    return password


@app.command("create")
def create(
    ctx: typer.Context,
    account: Annotated[
        str,
        typer.Argument(
            metavar="ACCOUNT",
            help="The new account's id: 1 to 64 of a-z 0-9 . _ - @ +, kept lowercase.",
        ),
    ],
    plan: Annotated[Plan, typer.Option("--plan", help="free or pro.")] = Plan.FREE,
    password_stdin: PasswordStdin = False,
    json_output: output.JsonOption = False,
) -> None:
    """Create ACCOUNT with a password, to sign in with (POST /api/auth/login).

    Example: pushctl accounts create alice --plan pro
    """
    services = state_of(ctx).services
    try:
        created = services.people.create(account, plan, read_password(password_stdin))
    except AccountExists as exists:
        # The likely wish is a password for it: say how.
        raise AccountExists(
            f"{exists.message}: give it a password with pushctl accounts passwd {account}"
        ) from None
    _print_account(created, json_output)


@app.command("passwd")
def passwd(
    ctx: typer.Context,
    account: Annotated[str, typer.Argument(metavar="ACCOUNT", help="An existing account.")],
    password_stdin: PasswordStdin = False,
    json_output: output.JsonOption = False,
) -> None:
    """Set ACCOUNT's password and sign out every session of it.

    Example: pushctl accounts passwd alice
    """
    check_account(account, "'ACCOUNT'")
    services = state_of(ctx).services
    changed = services.people.set_password(account, read_password(password_stdin))
    _print_account(changed, json_output)


def _summary_json(summary: AccountSummary) -> dict[str, Any]:
    account = summary.account
    return account_json(account) | {
        "password": summary.has_password,
        "lastSignInAt": maybe_timestamp(account.last_sign_in_at),
    }


@app.command("list")
def list_accounts(ctx: typer.Context, json_output: output.JsonOption = False) -> None:
    """Every account: plan, whether it has a password, creation and last sign-in.

    Example: pushctl accounts list --json
    """
    summaries = state_of(ctx).services.people.list()
    if json_output:
        output.print_json([_summary_json(s) for s in summaries])
        return
    output.print_table(
        ["id", "plan", "password", "created", "last sign-in"],
        [
            (
                s.account.id,
                s.account.plan.value,
                output.yes_no(s.has_password),
                output.when(s.account.created_at),
                output.when(s.account.last_sign_in_at),
            )
            for s in summaries
        ],
    )


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
    _print_account(updated, json_output)
