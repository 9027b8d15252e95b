"""pushctl account: the signed-in account's own settings (time zone, quiet hours, snooze),
through the client; `pushctl accounts` is the operator's view of every account."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

import typer

from pushcore.client.resources.account import UNSET, Unset
from pushcore.converter import AccountView, to_json
from pushcore_cli import output
from pushcore_cli.commands import AccountOption, api_for
from pushcore_cli.durations import HELP as DURATION_HELP
from pushcore_cli.durations import parse_duration
from pushcore_cli.errors import naming_options

app = typer.Typer(
    help="Your account's time zone, quiet hours and snooze.\n\n"
    "Example: pushctl account set --time-zone Europe/Berlin --quiet-hours 22:00-07:00",
    no_args_is_help=True,
)
OFF = "off"
OPTIONS = {"timeZone": "--time-zone", "quietHours": "--quiet-hours", "snoozeUntil": "--snooze"}


def quiet_hours_text(view: AccountView) -> str:
    """Quiet hours in one line: ``22:00-07:00 every day, hold, bypass critical`` or off."""
    hours = view.quiet_hours
    if hours is None:
        return OFF
    days = "every day" if len(hours.days) == 7 else ",".join(hours.days)
    bypass = ",".join(hours.bypass) or "nothing"
    return f"{hours.start}-{hours.end} {days}, {hours.mode}, bypass {bypass}"


def _print(view: AccountView, json_output: bool) -> None:
    if json_output:
        output.print_json(to_json(view))
        return
    snooze = None if view.snooze_until is None else output.when(view.snooze_until)
    output.print_record(
        [
            ("id", view.id),
            ("plan", view.plan.value),
            ("time zone", view.time_zone),
            ("quiet hours", quiet_hours_text(view)),
            ("snoozed until", snooze or OFF),
        ]
    )


@app.command("show")
def show(
    ctx: typer.Context, account: AccountOption = None, json_output: output.JsonOption = False
) -> None:
    """Show the account with its time zone, quiet hours and snooze.

    Example: pushctl account show
    """
    api = api_for(ctx, account)
    _print(api.client.account.get(), json_output)


def parse_window(text: str, mode: str | None, days: str | None) -> dict[str, Any] | None:
    """``22:00-07:00`` (with ``mode`` and ``days`` when given) as the API's quietHours;
    ``off`` is None."""
    if text == OFF:
        return None
    start, sep, end = text.partition("-")
    if not sep:
        raise typer.BadParameter(
            f"{text!r} is not a window: use START-END, e.g. 22:00-07:00, or off",
            param_hint="'--quiet-hours'",
        )
    window: dict[str, Any] = {"start": start.strip(), "end": end.strip()}
    if mode is not None:
        window["mode"] = mode
    if days is not None:
        window["days"] = [d.strip() for d in days.split(",") if d.strip()]
    return window


@app.command("set")
def set_(
    ctx: typer.Context,
    time_zone: Annotated[
        str | None,
        typer.Option("--time-zone", metavar="ZONE", help="An IANA zone, e.g. Europe/Berlin."),
    ] = None,
    quiet_hours: Annotated[
        str | None,
        typer.Option(
            "--quiet-hours",
            metavar="START-END",
            help="Local times, e.g. 22:00-07:00 (an end before the start crosses midnight),"
            " or off.",
        ),
    ] = None,
    mode: Annotated[
        str | None,
        typer.Option(
            "--mode", help="With --quiet-hours: hold (wait, default) or silent (go quietly)."
        ),
    ] = None,
    days: Annotated[
        str | None,
        typer.Option(
            "--days", metavar="DAYS", help="With --quiet-hours: e.g. mon,tue,wed (default all)."
        ),
    ] = None,
    snooze: Annotated[
        str | None,
        typer.Option(
            "--snooze",
            metavar="DURATION",
            help=f"Hold every push for this long ({DURATION_HELP}), or off.",
        ),
    ] = None,
    account: AccountOption = None,
    json_output: output.JsonOption = False,
) -> None:
    """Change your time zone, quiet hours or snooze; what is not given is kept.

    Example: pushctl account set --quiet-hours 22:00-07:00 --snooze 1h
    """
    if (mode is not None or days is not None) and (quiet_hours is None or quiet_hours == OFF):
        raise typer.BadParameter("needs --quiet-hours START-END", param_hint="'--mode'/'--days'")
    if time_zone is None and quiet_hours is None and snooze is None:
        raise typer.BadParameter(
            "nothing to change", param_hint="'--time-zone'/'--quiet-hours'/'--snooze'"
        )
    window: dict[str, Any] | Unset | None = UNSET
    if quiet_hours is not None:
        window = parse_window(quiet_hours, mode, days)
    until: datetime | Unset | None = UNSET
    if snooze is not None:
        until = None if snooze == OFF else datetime.now(UTC) + _duration(snooze)
    with naming_options(OPTIONS):
        api = api_for(ctx, account)
        view = api.client.account.update(
            time_zone=UNSET if time_zone is None else time_zone,
            quiet_hours=window,
            snooze_until=until,
        )
    _print(view, json_output)


def _duration(text: str) -> timedelta:
    try:
        return parse_duration(text)
    except typer.BadParameter as exc:
        raise typer.BadParameter(str(exc), param_hint="'--snooze'") from None
