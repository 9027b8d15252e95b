"""Root options, settings from the environment, and the error map."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pushcore import Services, Settings, build_services
from pushcore.domain import errors as e
from pushcore_cli.errors import EXIT_CODES, exit_code_for
from pushcore_cli.main import app
from tests.cli.conftest import Cli
from tests.cli.runner import CliRunner


def test_the_data_dir_can_come_from_the_environment(tmp_path: Path) -> None:
    (tmp_path / "env").mkdir()
    result = CliRunner().invoke(
        app, ["token", "issue", "alice"], env={"PUSHCORE_DATA_DIR": str(tmp_path / "env")}
    )

    assert result.exit_code == 0, result.output
    assert (tmp_path / "env" / "jwt-secret").is_file()


def test_the_data_dir_option_wins_over_the_environment(tmp_path: Path) -> None:
    (tmp_path / "option").mkdir()
    (tmp_path / "env").mkdir()
    result = CliRunner().invoke(
        app,
        ["--data-dir", str(tmp_path / "option"), "token", "issue", "alice"],
        env={"PUSHCORE_DATA_DIR": str(tmp_path / "env")},
    )

    assert result.exit_code == 0, result.output
    assert (tmp_path / "option" / "jwt-secret").is_file()
    assert not (tmp_path / "env" / "jwt-secret").exists()


def test_the_default_database_is_sqlite_in_the_data_dir(cli: Cli, data_dir: Path) -> None:
    cli("keys list --account alice")

    assert (data_dir / "pushcore.db").is_file()


def test_a_database_url_chooses_the_store(cli: Cli, data_dir: Path) -> None:
    cli("--database-url memory:// keys create --account alice --name ci --scope devices:read")

    # Another process (here: another invocation) sees nothing of a memory store.
    assert json.loads(cli("--database-url memory:// keys list --account alice --json").stdout) == []
    assert not (data_dir / "pushcore.db").exists()


def test_a_config_file_is_read(cli: Cli, tmp_path: Path, data_dir: Path) -> None:
    config = tmp_path / "pushcore.toml"
    config.write_text('database_url = "memory://"\n', encoding="utf-8")

    created = cli(f"--config {config} keys create --account alice --name ci --scope devices:read")
    listed = cli(f"--config {config} keys list --account alice --json")

    assert created.exit_code == 0, created.output
    # The file's memory store was used: nothing outlived the first command,
    # and no SQLite file was made in the data directory.
    assert json.loads(listed.stdout) == []
    assert not (data_dir / "pushcore.db").exists()


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


@pytest.mark.parametrize(
    "command",
    [
        "keys revoke --account alice key_01JD0000000000000000000000",  # NotFound
        "keys create --account alice --name ci --scope nope",  # ValidationError
        "devices remove --account alice dev_01JD0000000000000000000000",  # DeviceNotFound
    ],
)
def test_a_service_refusal_exits_1_with_the_message_on_stderr(cli: Cli, command: str) -> None:
    result = cli(command)  # an error that escaped the map would be raised here

    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith("error: ")


def test_the_exit_code_is_looked_up_along_the_class_hierarchy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every family exits 1 today; give one its own code to see the lookup work.
    monkeypatch.setitem(EXIT_CODES, e.NotFound, 4)

    class Gone(e.NotFound):
        """A subclass nobody put in the table."""

    assert exit_code_for(Gone("gone")) == 4
    assert exit_code_for(e.DeviceNotFound("Device not found")) == 4
    assert exit_code_for(e.NotCancellable("Already delivered")) == 1  # another family


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

    monkeypatch.setattr("pushcore.bootstrap.build_services", build)
    monkeypatch.setattr(Services, "close", close)

    assert cli("keys list --help").exit_code == 0
    assert events == []

    assert cli("keys list --account alice").exit_code == 0
    assert events == ["build", "close"]

    events.clear()
    assert cli("keys revoke --account alice key_01JD0000000000000000000000").exit_code == 1
    assert events == ["build", "close"]
