"""pushctl keys: create (shown once), list masked, revoke; validated like the HTTP API."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from starlette.testclient import TestClient

from pushcore import Scope, Unauthorized
from pushcore.converter import parse_timestamp
from pushcore_http import create_app
from tests.cli.conftest import Cli, OpenServices

FULL_KEY = re.compile(r"psk_[0-9A-Za-z]{38}")
CREATE = "keys create --account alice --name ci --scope notifications:write"


def create_key(cli: Cli, options: str = "") -> dict[str, Any]:
    """Create a key of alice with --json and return the creation response."""
    result = cli(f"{CREATE} {options} --json")
    assert result.exit_code == 0, result.output
    body: dict[str, Any] = json.loads(result.stdout)
    return body


def test_create_prints_the_full_key_once_with_a_warning(
    cli: Cli, open_services: OpenServices
) -> None:
    result = cli(f"{CREATE} --scope devices:read")

    assert result.exit_code == 0, result.output
    keys = FULL_KEY.findall(result.stdout)
    assert len(keys) == 1
    assert "will not be shown again" in result.stderr
    assert keys[0] not in result.stderr
    principal = open_services().auth.authenticate_key(keys[0])
    assert principal.account_id == "alice"
    assert principal.scopes == {Scope.NOTIFICATIONS_WRITE, Scope.DEVICES_READ}


def test_create_json_is_the_http_creation_response(cli: Cli) -> None:
    body = create_key(cli, "--scope notifications:write")

    assert set(body) == {"id", "name", "key", "keyPrefix", "scopes", "expiresAt", "createdAt"}
    assert FULL_KEY.fullmatch(body["key"])
    assert body["keyPrefix"] == body["key"][:12]
    assert body["scopes"] == ["notifications:write"]
    assert body["expiresAt"] is None


def test_list_never_shows_the_secret(cli: Cli) -> None:
    created = create_key(cli)
    secret = created["key"]

    listed = cli("keys list --account alice --json")
    table = cli("keys list --account alice")

    assert listed.exit_code == 0, listed.output
    assert table.exit_code == 0, table.output
    for result in (listed, table):
        assert secret not in result.output
        assert not FULL_KEY.search(result.output)
    [item] = json.loads(listed.stdout)
    assert item["id"] == created["id"]
    assert item["keyPrefix"] == secret[:12]
    assert item["isActive"] is True
    assert "key" not in item
    assert created["id"] in table.stdout
    assert secret[:12] in table.stdout


def test_list_json_is_what_the_http_api_returns(cli: Cli, open_services: OpenServices) -> None:
    create_key(cli)
    create_key(cli, "--expires-in 7d")
    services = open_services()
    token = services.tokens.issue("alice", timedelta(minutes=5))

    with TestClient(create_app(services)) as client:
        response = client.get("/api/keys", headers={"Authorization": f"Bearer {token}"})

    assert response.status_code == 200
    assert json.loads(cli("keys list --account alice --json").stdout) == response.json()


def test_an_account_without_keys_lists_nothing(cli: Cli) -> None:
    result = cli("keys list --account nobody --json")

    assert result.exit_code == 0
    assert json.loads(result.stdout) == []
    assert cli("keys list --account nobody").stdout == ""


def test_revoke_stops_the_key_and_keeps_it_listed(cli: Cli, open_services: OpenServices) -> None:
    created = create_key(cli)

    result = cli("keys revoke --account alice", created["id"])

    assert result.exit_code == 0, result.output
    assert created["id"] in result.stderr
    with pytest.raises(Unauthorized, match="API key revoked"):
        open_services().auth.authenticate_key(created["key"])
    [item] = json.loads(cli("keys list --account alice --json").stdout)
    assert item["isActive"] is False


def test_revoking_twice_succeeds_both_times(cli: Cli) -> None:
    key_id = create_key(cli)["id"]

    first = cli("keys revoke --account alice --json", key_id)
    second = cli("keys revoke --account alice --json", key_id)

    assert first.exit_code == second.exit_code == 0
    assert json.loads(first.stdout) == json.loads(second.stdout) == {"success": True, "id": key_id}


def test_revoking_an_unknown_key_is_refused(cli: Cli) -> None:
    result = cli("keys revoke --account alice key_01JD0000000000000000000000")

    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == "error: API key not found\n"


def test_another_accounts_key_is_not_found(cli: Cli, open_services: OpenServices) -> None:
    created = create_key(cli)

    result = cli("keys revoke --account mallory", created["id"])

    assert result.exit_code == 1
    assert "API key not found" in result.stderr
    assert open_services().auth.authenticate_key(created["key"]).account_id == "alice"


def test_an_unknown_scope_is_refused_naming_the_field(cli: Cli) -> None:
    result = cli("keys create --account alice --name ci --scope bogus")

    assert result.exit_code == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert lines[0].startswith("error: ")
    assert any(line.startswith("  --scope: must be ") for line in lines[1:])
    assert "Traceback" not in result.output


def test_every_invalid_option_is_listed_by_its_name(cli: Cli) -> None:
    result = cli("keys create --account alice --name ' ' --scope bogus --expires-at tomorrow")

    assert result.exit_code == 1
    first, *rest = result.stderr.splitlines()
    assert first == "error: Invalid request: --name, --scope, --expires-at"
    assert {line.split(":")[0].strip() for line in rest} == {"--name", "--scope", "--expires-at"}


def test_expires_in_sets_the_expiry(cli: Cli) -> None:
    before = datetime.now(UTC)

    created = create_key(cli, "--expires-in 30d")

    expires = parse_timestamp(created["expiresAt"])
    assert abs(expires - (before + timedelta(days=30))) < timedelta(seconds=5)


def test_expires_at_takes_any_offset_and_normalises_to_utc(cli: Cli) -> None:
    created = create_key(cli, "--expires-at 2999-01-01T02:00:00+02:00")

    assert created["expiresAt"] == "2999-01-01T00:00:00.000Z"


def test_an_expiry_in_the_past_is_refused(cli: Cli) -> None:
    result = cli(f"{CREATE} --expires-at 2020-01-01T00:00:00Z")

    assert result.exit_code == 1
    assert "  --expires-at: must be in the future" in result.stderr.splitlines()


@pytest.mark.parametrize(
    "command",
    [
        "keys create --account alice --scope devices:read",
        "keys create --account alice --name ci",
        "keys create --name ci --scope devices:read",
        f"{CREATE} --expires-in 1y",
        f"{CREATE} --expires-in 1d --expires-at 2999-01-01T00:00:00Z",
        "keys revoke --account alice",
        "keys list",
    ],
    ids=[
        "no name",
        "no scope",
        "no account",
        "bad duration",
        "both expiries",
        "no key id",
        "list without account",
    ],
)
def test_usage_errors_exit_2(cli: Cli, command: str) -> None:
    result = cli(command)

    assert result.exit_code == 2
    assert result.stdout == ""
