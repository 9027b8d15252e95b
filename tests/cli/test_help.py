"""Every command and group has help with an example (sqlite-utils' test_docs habit)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import typer
from typer.core import TyperGroup

from pushcore_cli.main import app
from tests.cli.runner import CliRunner


def command_paths() -> Iterator[tuple[str, ...]]:
    """Every group and command, as the words that invoke it (the root is ``()``)."""

    def walk(command: object, path: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
        yield path
        if isinstance(command, TyperGroup):
            for name, sub in command.commands.items():
                yield from walk(sub, (*path, name))

    yield from walk(typer.main.get_command(app), ())


PATHS = list(command_paths())


def test_the_tree_has_the_milestone_commands() -> None:
    assert {" ".join(p) for p in PATHS} >= {
        "serve",
        "token issue",
        "accounts set-plan",
        "keys create",
        "keys list",
        "keys revoke",
        "devices add",
        "devices list",
        "devices remove",
        "send",
        "notifications list",
        "notifications show",
        "notifications cancel",
        "notifications stats",
        "listen",
    }


@pytest.mark.parametrize("path", PATHS, ids=lambda p: " ".join(p) or "pushctl")
def test_help_exits_0_with_an_example(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(app, [*path, "--help"])

    assert result.exit_code == 0, result.output
    assert "Usage: pushctl" in result.stdout
    example = result.stdout.split("Example:", 1)[1].splitlines()[0]
    assert "pushctl" in example


def test_help_works_even_when_the_configuration_is_broken() -> None:
    # Settings are loaded when a command needs them, not before --help.
    result = CliRunner().invoke(app, ["--config", "/nonexistent.toml", "keys", "list", "--help"])

    assert result.exit_code == 0, result.output


def test_version() -> None:
    result = CliRunner().invoke(app, ["--version"])

    assert result.exit_code == 0
    assert result.stdout.startswith("pushctl ")


@pytest.mark.parametrize(
    ("path", "flag"),
    [(("keys", "list"), "--json"), (("accounts", "create"), "--password-stdin")],
)
def test_a_flag_shows_no_value_to_give(path: tuple[str, ...], flag: str) -> None:
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"})

    [line] = [line for line in result.stdout.splitlines() if f" {flag} " in line]
    assert "<bool>" not in line
