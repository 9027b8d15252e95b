"""Typer's test runner, with pushctl's command tree built once per test process.

Typer builds the click command tree from the commands' signatures on every
``invoke`` (reading the type hints of some forty functions): about half the
CPU time of an in-process CLI test. ``pushctl`` builds it once per run, and
the tree holds no state between runs, so building it once per test process
runs the same commands.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any
from unittest import mock

import typer
import typer.main
import typer.testing
from typer.testing import Result


@functools.cache
def command(app: typer.Typer) -> Any:
    """The click command tree of ``app``, built on first use."""
    return typer.main.get_command(app)


class CliRunner(typer.testing.CliRunner):
    """:class:`typer.testing.CliRunner` over the command tree built once."""

    def invoke(
        self,
        app: typer.Typer,
        args: str | Sequence[str] | None = None,
        input: bytes | str | None = None,
        env: Mapping[str, str | None] | None = None,
        catch_exceptions: bool = True,
        color: bool = False,
        **extra: Any,
    ) -> Result:
        """Run ``app`` as :meth:`typer.testing.CliRunner.invoke` does."""
        with mock.patch.object(typer.testing, "_get_command", command):
            return super().invoke(app, args, input, env, catch_exceptions, color, **extra)
