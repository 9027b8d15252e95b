"""What the commands that list a page at a time share: --limit, --cursor, the page
printed as a table or JSON, and the command line that shows the next page."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Protocol, TypeVar

import typer

from pushcore.converter import parse_list_query
from pushcore_cli import output

T_co = TypeVar("T_co", covariant=True)

# The API's page size when none is asked for, as its own query parsing has it.
DEFAULT_LIMIT = parse_list_query(None, None)[1]
# The query fields of a paged list, by the option that sets them.
PAGE_OPTIONS = {"status": "--status", "limit": "--limit", "cursor": "--cursor"}

LimitOption = Annotated[
    int | None,
    typer.Option("--limit", metavar="N", help=f"At most N (1 to 100, default {DEFAULT_LIMIT})."),
]
CursorOption = Annotated[
    str | None,
    typer.Option("--cursor", help="Continue after a previous page (its nextCursor)."),
]


class Paged(Protocol[T_co]):
    """A page view: its items and the cursor of the next page (None: the last)."""

    @property
    def items(self) -> Sequence[T_co]: ...

    @property
    def next_cursor(self) -> str | None: ...


def page_size(limit: int | None) -> int:
    """The page size to ask for: the API's unless --limit (the client's own is the largest)."""
    return DEFAULT_LIMIT if limit is None else limit


def print_page(
    page: Paged[T_co],
    json_output: bool,
    *,
    empty: str,
    headers: list[str],
    row: Callable[[T_co], list[str | None]],
    again: str,
    status: str | None,
    limit: int | None,
) -> None:
    """``page`` as JSON, or as a table (``empty`` when it has no items) followed by the
    command (``again`` with the options given) that shows the next page."""
    if json_output:
        output.show(page, json_output)
        return
    if not page.items:
        output.say(empty)
        return
    output.print_table(headers, (row(item) for item in page.items))
    if page.next_cursor is not None:
        if status is not None:
            again += f" --status {status.upper()}"
        if limit is not None:
            again += f" --limit {limit}"
        output.say(f"More: {again} --cursor {page.next_cursor}")
