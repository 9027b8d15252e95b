"""``--local-time 09:00 [--date 2026-12-24]``: a local-time send (the API's ``deliverAt``),
each recipient's delivery at that wall-clock time in their own account's zone."""

from __future__ import annotations

from typing import Annotated, Any

import typer

# The field --local-time (with --date) stands for.
LOCAL_TIME_FIELDS = {"deliver_at": "local_time"}
# The API's names for its parts, by the option that sets each (for error messages).
LOCAL_TIME_FLAGS = {"deliverAt.localTime": "--local-time", "deliverAt.date": "--date"}

LocalTimeOption = Annotated[
    str | None,
    typer.Option(
        "--local-time",
        metavar="HH:MM",
        help="At this time of day in each recipient's own time zone (the next such time).",
    ),
]
DateOption = Annotated[
    str | None,
    typer.Option(
        "--date",
        metavar="YYYY-MM-DD",
        help="With --local-time: on this day (where it has passed, at once).",
    ),
]


def deliver_at(local_time: str | None, date: str | None, *others: str) -> dict[str, Any] | None:
    """The API's ``deliverAt`` for the options, or None; ``others``: the other timing
    options given (--delay, --at), which cannot go with it."""
    if local_time is None:
        if date is not None:
            raise typer.BadParameter("--date needs --local-time", param_hint="'--date'")
        return None
    if others:
        raise typer.BadParameter(
            f"give --local-time or {' / '.join(others)}, not both", param_hint="'--local-time'"
        )
    return {"localTime": local_time} | ({} if date is None else {"date": date})
