"""What pushctl prints: tables for people and JSON for scripts on stdout, diagnostics on stderr.

Consoles are made per call, never at import, so that whatever ``sys.stdout``
is at that moment (a terminal, a pipe, a test runner's buffer) receives the
output.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from pushcore.domain.errors import FieldError

JsonOption = Annotated[
    bool,
    typer.Option(
        "--json",
        help="Print JSON (the same shape as the HTTP API) instead of a table.",
    ),
]

NONE = "-"


# A pipe or a file has no width: folding cells at rich's default 80 columns
# would break grep and awk, so only a terminal's width (or COLUMNS) limits tables.
PIPE_WIDTH = 250


def stdout() -> Console:
    """A console on stdout, for results."""
    # No highlighting: colouring ids and numbers at random helps nobody.
    console = Console(highlight=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = PIPE_WIDTH
    return console


def stderr() -> Console:
    """A console on stderr, for diagnostics."""
    return Console(stderr=True, highlight=False)


def print_json(data: Any) -> None:
    """``data`` as indented JSON on stdout."""
    # ensure_ascii=False: the same text the HTTP API sends (UTF-8, not \\u escapes).
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False))


def show(
    view: Any, json_output: bool, record: Iterable[tuple[str, str | None]] | None = None
) -> None:
    """A view as JSON with ``--json``; else its ``record`` (a field a line), when given."""
    if json_output:
        # Here, not at the top: every command (and --help) loads this module, not the converter.
        from pushcore.converter import to_json

        print_json(to_json(view))
    elif record is not None:
        print_record(record)


def _cell(value: str | None) -> Text:
    # Text, not str: rich would read "[...]" in a device name as markup.
    return Text(NONE if value is None else value)


def print_table(columns: Sequence[str], rows: Iterable[Sequence[str | None]]) -> None:
    """A table with a header row on stdout."""
    # rich's tables (and the fractions they size columns with) load with the first
    # table: a send prints none.
    from rich import box
    from rich.table import Table

    table = Table(
        *columns, box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0), show_edge=False, pad_edge=False
    )
    for column in table.columns:
        # Fold rather than truncate: an id cut short by an ellipsis is useless.
        column.overflow = "fold"
    # The first column is the id people copy into the next command: keep it whole.
    table.columns[0].no_wrap = True
    for row in rows:
        table.add_row(*(_cell(value) for value in row))
    stdout().print(table)


def print_record(fields: Iterable[tuple[str, str | None]]) -> None:
    """One object as ``name  value`` lines on stdout."""
    from rich.table import Table

    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for name, value in fields:
        table.add_row(Text(name), _cell(value))
    stdout().print(table)


def say(message: str) -> None:
    """A status line for people on stderr (stdout stays for results)."""
    stderr().print(Text(message), soft_wrap=True)


def warn(message: str) -> None:
    """A warning on stderr."""
    stderr().print(Text.assemble(("warning: ", "bold yellow"), message), soft_wrap=True)


def error(message: str, details: Sequence[FieldError] = ()) -> None:
    """``error: <message>`` on stderr, then one ``  <field>: <message>`` line per detail."""
    console = stderr()
    console.print(Text.assemble(("error: ", "bold red"), message), soft_wrap=True)
    for detail in details:
        console.print(Text(f"  {detail.field}: {detail.message}"), soft_wrap=True)


def when(value: datetime | None) -> str | None:
    """A timestamp for people: UTC to the minute; None stays None (shown as ``-``)."""
    if value is None:
        return None
    # Tables are narrow; --json has the millisecond-precise value.
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%MZ")


def yes_no(value: bool) -> str:
    """``yes`` or ``no``."""
    return "yes" if value else "no"
