"""pushctl tests: the CLI in-process on the default SQLite store in a temporary data directory."""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from typer.testing import Result

from pushcore import Services, build_services, load_settings
from pushcore.ports import Clock
from pushcore_cli.main import app
from tests.cli.runner import CliRunner


@pytest.fixture(autouse=True)
def _no_pushcore_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The developer's own PUSHCORE_* settings must not leak into the tests."""
    for name in list(os.environ):
        if name.startswith("PUSHCORE_"):
            monkeypatch.delenv(name)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """An empty data directory: the first command fills it (and says nothing about it,
    as it would when it had to create the directory)."""
    path = tmp_path / "data"
    path.mkdir(mode=0o700)
    return path


Cli = Callable[..., Result]


@pytest.fixture
def cli(data_dir: Path) -> Cli:
    """Run ``pushctl --data-dir <data_dir> <command> *extra`` in-process.

    ``command`` is split like a shell would (``"keys list --account alice"``);
    ``extra`` arguments are passed as they are; ``input`` is stdin.
    """
    runner = CliRunner()

    def run(command: str, *extra: str, input: str | None = None) -> Result:
        args = ["--data-dir", str(data_dir), *shlex.split(command), *extra]
        result = runner.invoke(app, args, input=input)
        # An unexpected exception is a bug; show it rather than a bare exit code.
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception
        return result

    return run


OpenServices = Callable[..., Services]


@pytest.fixture
def open_services(data_dir: Path) -> Iterator[OpenServices]:
    """Services on the CLI's data directory, built when the test asks (closed after)."""
    built: list[Services] = []

    def make(clock: Clock | None = None) -> Services:
        services = build_services(load_settings(env={}, data_dir=data_dir), clock=clock)
        built.append(services)
        return services

    yield make
    for services in built:
        services.close()
