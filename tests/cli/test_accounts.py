"""pushctl accounts set-plan."""

from __future__ import annotations

import json

from pushcore import Plan
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
