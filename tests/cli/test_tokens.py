"""pushctl token issue: a JWT on stdout, signed with the data directory's secret."""

from __future__ import annotations

import json
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pushcore import Unauthorized
from pushcore.bootstrap import JWT_SECRET_FILE
from pushcore.converter import parse_timestamp
from pushcore_cli.main import app
from tests.cli.conftest import Cli, OpenServices
from tests.cli.runner import CliRunner
from tests.fakes.clock import FakeClock


def test_prints_only_a_token_that_the_services_accept(
    cli: Cli, data_dir: Path, open_services: OpenServices
) -> None:
    result = cli("token issue alice")

    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert len(lines) == 1
    principal = open_services().auth.authenticate_token(lines[0])
    assert principal.account_id == "alice"


def test_generates_the_secret_on_first_run_readable_only_by_its_owner(
    cli: Cli, data_dir: Path
) -> None:
    assert not (data_dir / JWT_SECRET_FILE).exists()

    assert cli("token issue alice").exit_code == 0

    mode = (data_dir / JWT_SECRET_FILE).stat().st_mode
    assert stat.S_IMODE(mode) == 0o600


def test_later_runs_sign_with_the_same_secret(cli: Cli, open_services: OpenServices) -> None:
    first = cli("token issue alice").stdout.strip()
    second = cli("token issue bob").stdout.strip()

    services = open_services()
    assert services.auth.authenticate_token(first).account_id == "alice"
    assert services.auth.authenticate_token(second).account_id == "bob"


def test_json_gives_the_token_and_its_expiry(cli: Cli) -> None:
    before = datetime.now(UTC)

    result = cli("token issue alice --ttl 15m --json")

    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert set(body) == {"token", "expiresAt"}
    expires = parse_timestamp(body["expiresAt"])
    expected = before + timedelta(minutes=15)
    assert abs(expires - expected) < timedelta(seconds=5)
    assert body["expiresAt"].endswith(".000Z")


def test_the_ttl_sets_when_the_token_stops_working(cli: Cli, open_services: OpenServices) -> None:
    token = cli("token issue alice --ttl 10m").stdout.strip()
    clock = FakeClock(datetime.now(UTC))
    services = open_services(clock)
    clock.advance(timedelta(minutes=9))
    assert services.auth.authenticate_token(token).account_id == "alice"

    # Past the expiry and the verifier's clock leeway.
    clock.advance(timedelta(minutes=2))
    with pytest.raises(Unauthorized, match="Token expired"):
        services.auth.authenticate_token(token)


@pytest.mark.parametrize("ttl", ["soon", "0", "-1h"])
def test_a_bad_ttl_is_a_usage_error(cli: Cli, ttl: str) -> None:
    result = cli("token issue alice", f"--ttl={ttl}")

    assert result.exit_code == 2
    assert result.stdout == ""
    assert "--ttl" in result.stderr


@pytest.mark.parametrize("account", ["", "x" * 256])
def test_an_impossible_account_id_is_a_usage_error(cli: Cli, account: str) -> None:
    result = cli("token issue", account)

    assert result.exit_code == 2
    assert result.stdout == ""


def test_the_account_is_required(cli: Cli) -> None:
    assert cli("token issue").exit_code == 2


def test_without_a_data_directory_it_refuses_and_makes_none_up(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    result = CliRunner().invoke(app, ["--data-dir", str(missing), "token", "issue", "alice"])
    assert result.exit_code == 1
    assert str(missing) in result.output
    assert result.stdout == ""
    assert not missing.exists()


def test_with_a_configured_secret_it_creates_nothing(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    env = {"PUSHCORE_JWT_SECRET": "s" * 40, "PUSHCORE_DATA_DIR": str(data_dir)}
    result = CliRunner().invoke(app, ["token", "issue", "alice"], env=env)
    assert result.exit_code == 0, result.output
    assert result.stdout.count(".") == 2  # a JWT
    assert not data_dir.exists()


def test_in_an_existing_data_directory_it_signs_with_its_secret_and_opens_no_database(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    result = CliRunner().invoke(app, ["--data-dir", str(data_dir), "token", "issue", "alice"])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in data_dir.iterdir()) == ["jwt-secret"]
