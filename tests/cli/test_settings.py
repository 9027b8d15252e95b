"""Root options, settings from the environment, and the error map."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pushcore import Services, Settings, build_services
from pushcore.domain import errors as e
from pushcore_cli.errors import exit_code_for
from pushcore_cli.main import app
from tests.cli.conftest import Cli


def test_the_data_dir_can_come_from_the_environment(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["token", "issue", "alice"], env={"PUSHCORE_DATA_DIR": str(tmp_path / "env")}
    )

    assert result.exit_code == 0, result.output
    assert (tmp_path / "env" / "jwt-secret").is_file()


def test_the_data_dir_option_wins_over_the_environment(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["--data-dir", str(tmp_path / "option"), "token", "issue", "alice"],
        env={"PUSHCORE_DATA_DIR": str(tmp_path / "env")},
    )

    assert result.exit_code == 0, result.output
    assert (tmp_path / "option" / "jwt-secret").is_file()
    assert not (tmp_path / "env").exists()


def test_the_default_database_is_sqlite_in_the_data_dir(cli: Cli, data_dir: Path) -> None:
    cli("keys list --account alice")

    assert (data_dir / "pushcore.db").is_file()


def test_a_database_url_chooses_the_store(cli: Cli, data_dir: Path) -> None:
    cli("--database-url memory:// keys create --account alice --name ci --scope devices:read")

    # Another process (here: another invocation) sees nothing of a memory store.
    assert json.loads(cli("--database-url memory:// keys list --account alice --json").stdout) == []
    assert not (data_dir / "pushcore.db").exists()


def test_a_config_file_is_read(cli: Cli, tmp_path: Path) -> None:
    config = tmp_path / "pushcore.toml"
    config.write_text('database_url = "memory://"\n', encoding="utf-8")

    result = cli(f"--config {config} keys list --account alice")

    assert result.exit_code == 0, result.output


@pytest.mark.parametrize(
    ("options", "setting"),
    [
        ("--database-url mysql://db/pushcore", "PUSHCORE_DATABASE_URL"),
        ("--config /nonexistent/pushcore.toml", "PUSHCORE_CONFIG"),
    ],
)
def test_invalid_configuration_exits_1_naming_the_setting(
    cli: Cli, options: str, setting: str
) -> None:
    result = cli(f"{options} keys list --account alice")

    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith(f"error: {setting}: ")
    assert "Traceback" not in result.output


def test_an_unknown_setting_in_the_config_file_is_named(cli: Cli, tmp_path: Path) -> None:
    config = tmp_path / "pushcore.toml"
    config.write_text('databse_url = "memory://"\n', encoding="utf-8")

    result = cli(f"--config {config} token issue alice")

    assert result.exit_code == 1
    assert "databse_url" in result.stderr


def test_every_service_refusal_exits_1() -> None:
    refusals = [
        e.ValidationError([e.FieldError("name", "is required")]),
        e.Unauthorized("API key revoked"),
        e.NotFound("Device not found"),
        e.DeviceNotFound("Device not found"),
        e.PlanLimit("Stream limit reached"),
        e.NotCancellable("Already delivered"),
        e.RateLimited("Slow down", retry_after=3),
        e.ConfigError("PUSHCORE_PORT: must be from 0 to 65535"),
    ]

    assert {exit_code_for(error) for error in refusals} == {1}


def test_a_new_error_class_inherits_its_parents_exit_code() -> None:
    class Gone(e.NotFound):
        """A subclass nobody put in the table."""

    assert exit_code_for(Gone("gone")) == exit_code_for(e.NotFound("gone"))


def test_services_are_built_only_when_needed_and_closed_at_the_end(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[str] = []
    real_close = Services.close

    def build(settings: Settings) -> Services:
        events.append("build")
        return build_services(settings)

    def close(self: Services) -> None:
        events.append("close")
        real_close(self)

    monkeypatch.setattr("pushcore_cli.commands.build_services", build)
    monkeypatch.setattr(Services, "close", close)

    assert cli("keys list --help").exit_code == 0
    assert events == []

    assert cli("keys list --account alice").exit_code == 0
    assert events == ["build", "close"]

    events.clear()
    assert cli("keys revoke --account alice key_01JD0000000000000000000000").exit_code == 1
    assert events == ["build", "close"]
