"""``--ttl``: how long after its due time a notification may still be delivered, said as a
duration on the command line (the API's ``ttl`` in seconds)."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

import typer

from pushcore_cli.durations import HELP, duration_parser

# The fields --ttl stands for: the API takes `ttl` or `expiresAt`.
TTL_FIELDS = {"ttl": "ttl", "expires_at": "ttl"}

TtlOption = Annotated[
    timedelta | None,
    typer.Option(
        "--ttl",
        metavar="DURATION",
        parser=duration_parser,
        help=f"Not delivered (nor kept in the inbox) this long after it is due: {HELP}.",
    ),
]


def ttl_seconds(ttl: timedelta | None) -> int | None:
    """The API's ``ttl`` for ``--ttl`` (out-of-range values are the service's to refuse)."""
    return None if ttl is None else int(ttl.total_seconds())
