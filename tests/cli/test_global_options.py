"""The global options (--data-dir, --config, --database-url, --url, --api-key, --token)
are accepted before and after the command name, for every command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import Result

from pushcore_cli.global_options import GLOBAL_VALUE_OPTIONS, _global_params
from pushcore_cli.main import COMMANDS, app
from tests.cli.conftest import Cli
from tests.cli.runner import CliRunner
from tests.cli.test_help import PATHS

GLOBAL_OPTIONS = ["--data-dir", "--config", "--database-url", "--url", "--api-key", "--token"]
GROUPS = {path[:-1] for path in PATHS if path}
LEAVES = [path for path in PATHS if path and path not in GROUPS]
# Its own --token is the device's token: there the global one goes before the name.
OWN_FLAGS = {(("devices", "add"), "--token")}
LOCAL_ONLY = [
    ("serve",),
    ("worker",),
    ("token", "issue", "alice"),
    ("accounts", "set-plan", "alice", "pro"),
    ("gateways", "check"),
]


def invoke(args: list[str], env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(app, args, env=env)


def flat(text: str) -> str:
    """Output without the box rich draws around usage errors, on one line."""
    return " ".join(text.replace("│", " ").split())


def value(option: str, n: int) -> str:
    if option == "--url":
        return f"http://host-{n}.invalid"
    return f"/tmp/pushctl-test-{n}" if option in ("--data-dir", "--config") else f"value-{n}"


@pytest.mark.parametrize("option", GLOBAL_OPTIONS)
@pytest.mark.parametrize("path", LEAVES, ids=" ".join)
def test_every_command_takes_every_global_option_after_its_name(
    path: tuple[str, ...], option: str
) -> None:
    # Different values before and after the name: refused, which shows that the
    # one after the name was read as the global option and met the one before.
    result = invoke([option, value(option, 1), *path, option, value(option, 2)])

    assert result.exit_code == 2, result.output
    if (path, option) in OWN_FLAGS:
        assert "given twice" not in flat(result.output)
    else:
        assert "given twice with different values" in flat(result.output)
        assert f"'{option}'" in flat(result.output)


@pytest.mark.parametrize("position", ["before", "after"])
def test_the_data_dir_works_in_either_position(tmp_path: Path, position: str) -> None:
    data_dir = tmp_path / "d"
    command = ["keys", "list", "--account", "alice"]
    option = ["--data-dir", str(data_dir)]
    args = [*option, *command] if position == "before" else [*command, *option]

    result = invoke(args)

    assert result.exit_code == 0, result.output
    assert (data_dir / "pushcore.db").is_file()


def test_the_same_value_in_both_positions_is_fine(tmp_path: Path) -> None:
    data_dir = str(tmp_path / "d")
    (tmp_path / "d").mkdir()  # a server's: token issue makes none up

    result = invoke(["--data-dir", data_dir, "token", "issue", "alice", "--data-dir", data_dir])

    assert result.exit_code == 0, result.output
    assert (tmp_path / "d" / "jwt-secret").is_file()


def test_the_option_after_the_name_wins_over_the_environment(tmp_path: Path) -> None:
    (tmp_path / "option").mkdir()
    (tmp_path / "env").mkdir()
    result = invoke(
        ["token", "issue", "alice", "--data-dir", str(tmp_path / "option")],
        env={"PUSHCORE_DATA_DIR": str(tmp_path / "env")},
    )

    assert result.exit_code == 0, result.output
    assert (tmp_path / "option" / "jwt-secret").is_file()
    assert not (tmp_path / "env" / "jwt-secret").exists()


@pytest.mark.parametrize("position", ["before", "after"])
def test_the_database_url_works_in_either_position(cli: Cli, data_dir: Path, position: str) -> None:
    command = "keys list --account alice"
    option = "--database-url memory://"

    result = cli(f"{option} {command}" if position == "before" else f"{command} {option}")

    assert result.exit_code == 0, result.output
    assert not (data_dir / "pushcore.db").exists()


@pytest.mark.parametrize("position", ["before", "after"])
def test_the_config_file_works_in_either_position(
    cli: Cli, data_dir: Path, tmp_path: Path, position: str
) -> None:
    config = tmp_path / "pushcore.toml"
    config.write_text('database_url = "memory://"\n', encoding="utf-8")
    command = "keys list --account alice"
    option = f"--config {config}"

    result = cli(f"{option} {command}" if position == "before" else f"{command} {option}")

    assert result.exit_code == 0, result.output
    assert not (data_dir / "pushcore.db").exists()


@pytest.mark.parametrize("position", ["before", "after", "environment"])
@pytest.mark.parametrize("command", LOCAL_ONLY, ids=" ".join)
def test_local_only_commands_refuse_a_url(
    tmp_path: Path, command: tuple[str, ...], position: str
) -> None:
    data = ["--data-dir", str(tmp_path / "d")]
    url = ["--url", "http://127.0.0.1:9"]
    env = None
    if position == "before":
        args = [*data, *url, *command]
    elif position == "after":
        args = [*data, *command, *url]
    else:
        args, env = [*data, *command], {"PUSHCORE_URL": "http://127.0.0.1:9"}

    result = invoke(args, env)

    assert result.exit_code == 2, result.output
    assert "'--url'" in flat(result.output)
    assert "local data directory only" in flat(result.output)
    assert not (tmp_path / "d").exists()


def test_a_devices_add_token_is_the_device_token(cli: Cli) -> None:
    result = cli(
        "devices add --account alice --platform android --token fcm-registration-token --json"
    )

    assert result.exit_code == 0, result.output
    assert '"tokenPrefix": "fcm-regi"' in result.stdout


def test_global_options_are_listed_in_each_commands_help() -> None:
    result = invoke(["notifications", "list", "--help"])

    assert result.exit_code == 0
    for option in GLOBAL_OPTIONS:
        assert option in result.stdout
    assert "PUSHCORE_DATA_DIR" in result.stdout


def test_a_new_data_directory_is_announced_once(tmp_path: Path) -> None:
    data_dir = tmp_path / "fresh"

    first = invoke(["--data-dir", str(data_dir), "keys", "list", "--account", "alice"])
    second = invoke(["--data-dir", str(data_dir), "keys", "list", "--account", "alice"])

    assert first.exit_code == 0, first.output
    assert f"pushctl: created a new data directory at {data_dir.resolve()}\n" in first.stderr
    assert "created a new data directory" not in second.stderr
    assert first.stdout == second.stdout


def test_credentials_without_a_url_say_what_is_missing(cli: Cli) -> None:
    result = cli("--api-key psk_x notifications list")

    assert result.exit_code == 2
    assert "take effect with --url" in flat(result.output)


def test_the_entry_point_skips_the_value_of_every_global_option() -> None:
    # How pushctl finds the command's name before it builds the command tree.
    assert {flag for p in _global_params() for flag in p.opts} == GLOBAL_VALUE_OPTIONS


def test_a_value_that_reads_as_a_command_name_is_a_value(tmp_path: Path) -> None:
    # `--data-dir send`: the command is keys, and the data directory ./send.
    pushctl = [sys.executable, "-m", "pushcore_cli.main"]
    ran = subprocess.run(
        [*pushctl, "--data-dir", "send", "keys", "list", "--account", "a", "--json"],
        check=False,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if not k.startswith("PUSHCORE_")},
        timeout=60,
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip() == "[]"
    assert (tmp_path / "send" / "pushcore.db").is_file()


def test_pushctl_help_lists_every_command() -> None:
    shown = subprocess.run(
        [sys.executable, "-m", "pushcore_cli.main", "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
        timeout=60,
        check=True,
    )
    listed = {line.split()[1] for line in shown.stdout.splitlines() if line.startswith("│ ")}
    assert {name for name, _, _ in COMMANDS} <= listed
