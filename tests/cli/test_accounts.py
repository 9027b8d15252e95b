"""pushctl accounts: set-plan, create, passwd and list."""

from __future__ import annotations

import asyncio
import json

import pytest

from pushcore import Plan, Services
from pushcore.domain.errors import Unauthorized
from pushcore_cli.commands import accounts
from tests.cli.conftest import Cli, OpenServices


def test_set_plan_pro_then_free(cli: Cli, open_services: OpenServices) -> None:
    pro = cli("accounts set-plan alice pro --json")
    assert pro.exit_code == 0, pro.output
    body = json.loads(pro.stdout)
    assert body["id"] == "alice"
    assert body["plan"] == "pro"
    assert body["createdAt"].endswith("Z")

    free = cli("accounts set-plan alice free")
    assert free.exit_code == 0, free.output
    assert "free" in free.stdout
    assert "alice" in free.stdout

    assert open_services().accounts.ensure("alice").plan is Plan.FREE


def test_set_plan_keeps_the_creation_time(cli: Cli) -> None:
    first = json.loads(cli("accounts set-plan alice pro --json").stdout)
    second = json.loads(cli("accounts set-plan alice free --json").stdout)

    assert second["createdAt"] == first["createdAt"]


def test_an_unknown_plan_is_a_usage_error_and_changes_nothing(
    cli: Cli, open_services: OpenServices
) -> None:
    cli("accounts set-plan alice pro")

    result = cli("accounts set-plan alice gold")

    assert result.exit_code == 2
    assert result.stdout == ""
    assert open_services().accounts.ensure("alice").plan is Plan.PRO


def test_the_plan_is_required(cli: Cli) -> None:
    assert cli("accounts set-plan alice").exit_code == 2


# -- accounts with passwords --------------------------------------------------------

PASSWORD = "correct horse battery"


def signs_in(services: Services, account: str, password: str = PASSWORD) -> bool:
    try:
        asyncio.run(services.people.sign_in(account, password))
    except Unauthorized:
        return False
    return True


def test_create_reads_the_password_from_stdin_and_keeps_the_id_lowercase(
    cli: Cli, open_services: OpenServices
) -> None:
    made = cli("accounts create Alice --plan pro --password-stdin --json", input=PASSWORD + "\n")
    assert made.exit_code == 0, made.output
    assert json.loads(made.stdout)["id"] == "alice"
    assert json.loads(made.stdout)["plan"] == "pro"
    assert PASSWORD not in made.output
    services = open_services()
    assert signs_in(services, "Alice")
    assert not signs_in(services, "alice", PASSWORD + "\n")  # one newline is dropped, no more


def test_create_asks_twice_on_a_terminal(
    cli: Cli, open_services: OpenServices, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(accounts, "on_terminal", lambda: True)
    mismatch = cli(
        "accounts create bob", input=f"{PASSWORD}\nsomething else\n{PASSWORD}\n{PASSWORD}\n"
    )
    assert mismatch.exit_code == 0, mismatch.output
    assert PASSWORD not in mismatch.output  # never echoed
    assert signs_in(open_services(), "bob")


def test_without_a_terminal_or_stdin_it_is_a_usage_error(cli: Cli) -> None:
    result = cli("accounts create alice", input="")
    assert result.exit_code == 2
    assert "--password-stdin" in result.output


def test_create_refuses_a_taken_id_a_bad_id_and_a_short_password(cli: Cli) -> None:
    assert cli("accounts create alice --password-stdin", input=PASSWORD).exit_code == 0
    taken = cli("accounts create ALICE --password-stdin", input=PASSWORD)
    assert taken.exit_code == 1
    assert taken.stderr == (
        "error: An account 'alice' exists already: give it a password with"
        " pushctl accounts passwd ALICE\n"
    )
    bad = cli("accounts create 'al ice' --password-stdin", input=PASSWORD)
    assert bad.exit_code == 1
    assert "account:" in bad.stderr
    short = cli("accounts create carol --password-stdin", input="short")
    assert short.exit_code == 1
    assert "password: must be 8 to 256 characters" in short.stderr


@pytest.mark.parametrize("common", ["password", "Password1", "QWERTYUIOP"])
def test_create_and_passwd_refuse_a_common_password(
    cli: Cli, open_services: OpenServices, common: str
) -> None:
    made = cli("accounts create carol --password-stdin", input=common)
    assert made.exit_code == 1
    assert "password: is one of the 10,000 most common passwords" in made.stderr
    assert cli("accounts create carol --password-stdin", input=PASSWORD).exit_code == 0
    changed = cli("accounts passwd carol --password-stdin", input=common)
    assert changed.exit_code == 1
    assert "password: is one of the 10,000 most common passwords" in changed.stderr
    assert signs_in(open_services(), "carol")  # the old password still holds


def test_passwd_sets_a_password_and_signs_every_session_out(
    cli: Cli, open_services: OpenServices
) -> None:
    cli("accounts create alice --password-stdin", input=PASSWORD)
    services = open_services()
    session = asyncio.run(services.people.sign_in("alice", PASSWORD))
    changed = cli("accounts passwd alice --password-stdin", input="a new password\n")
    assert changed.exit_code == 0, changed.output
    with pytest.raises(Unauthorized):
        services.sessions.refresh(session.refresh_token)
    assert signs_in(services, "alice", "a new password")
    assert not signs_in(services, "alice")
    unknown = cli("accounts passwd nobody --password-stdin", input=PASSWORD)
    assert unknown.exit_code == 1
    assert "No account 'nobody'" in unknown.stderr


def test_passwd_gives_an_account_made_by_a_token_a_password(
    cli: Cli, open_services: OpenServices
) -> None:
    open_services().accounts.ensure("Idp-User")
    assert cli("accounts passwd Idp-User --password-stdin", input=PASSWORD).exit_code == 0
    assert signs_in(open_services(), "Idp-User")


def test_list_shows_plan_password_creation_and_last_sign_in(
    cli: Cli, open_services: OpenServices
) -> None:
    cli("accounts create alice --password-stdin", input=PASSWORD)
    cli("accounts set-plan bob pro")
    asyncio.run(open_services().people.sign_in("alice", PASSWORD))
    listed = json.loads(cli("accounts list --json").stdout)
    assert [(a["id"], a["plan"], a["password"]) for a in listed] == [
        ("alice", "free", True),
        ("bob", "pro", False),
    ]
    assert listed[0]["lastSignInAt"].endswith("Z")
    assert listed[1]["lastSignInAt"] is None
    table = cli("accounts list").stdout
    assert "last sign-in" in table
    assert "alice" in table
    assert "yes" in table
