"""pushctl schedules: recurring notifications by an RFC 5545 rule in a time zone."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

import typer

from pushcore.client._call import json_body
from pushcore.converter import to_json
from pushcore.converter.schedules import OccurrenceView, ScheduleView
from pushcore.domain.inputs import NewNotification
from pushcore.domain.schedules import ScheduleState
from pushcore_cli import output
from pushcore_cli.commands import AccountOption, api_for
from pushcore_cli.commands.notifications import metadata_fields
from pushcore_cli.errors import naming_options
from pushcore_cli.fields import field_options, flags

app = typer.Typer(
    help=(
        "Recurring schedules: a notification (or a stream send) again and again, by an"
        " RFC 5545 rule in a time zone.\n\n"
        'Example: pushctl schedules create "Stand-up" --rrule "FREQ=WEEKLY;BYDAY=MO,WE,FR;'
        'BYHOUR=9" --tz Europe/Berlin --account alice'
    ),
    no_args_is_help=True,
)

IdArgument = Annotated[
    str, typer.Argument(metavar="SCHEDULE_ID", help="The schedule's id (sch_...).")
]

# The template's fields create sets by options of its own; the rule sets its timing.
OWN = {
    "title": "title",
    "delay": "rrule",
    "custom_delay": "rrule",
    "scheduled_at": "rrule",
    # An instant makes no sense for every occurrence: --ttl says how long each lives.
    "expires_at": "rrule",
    "metadata": "metadata",
    "target_device_token": "device",
}


def _record(s: ScheduleView) -> list[tuple[str, str | None]]:
    return [
        ("id", s.id),
        ("name", s.name),
        ("state", s.state.value),
        ("rule", s.rrule),
        ("start", f"{s.start} {s.time_zone}"),
        ("excluded", ", ".join(s.exdates) or None),
        ("catch up", f"{s.catch_up.mode.value} within {s.catch_up.window}s"),
        ("title", str(s.template.get("title"))),
        ("stream", s.stream_id),
        ("next", output.when(s.next_occurrence_at)),
        ("last", output.when(s.last_occurrence_at)),
        ("sent", str(s.sent)),
        ("missed", str(s.missed)),
        ("revision", str(s.revision)),
        ("created", output.when(s.created_at)),
    ]


def _show(s: ScheduleView, json_output: bool, message: str) -> None:
    output.show(s, json_output, _record(s))
    output.say(message)


def _occurrences(found: list[OccurrenceView], json_output: bool) -> None:
    if json_output:
        output.print_json([to_json(o) for o in found])
        return
    output.print_table(
        ["at", "local time", "shifted"],
        ([output.when(o.at), o.local_time, "yes" if o.shifted else None] for o in found),
    )


@app.command("create")
@field_options(NewNotification, OWN)
def create(
    ctx: typer.Context,
    title: Annotated[str, typer.Argument(metavar="TITLE", help="Each notification's title.")],
    rrule: Annotated[
        str | None,
        typer.Option(
            "--rrule", metavar="RULE", help="Required: an RFC 5545 RRULE, FREQ=DAILY;BYHOUR=9."
        ),
    ] = None,
    tz: Annotated[
        str, typer.Option("--tz", metavar="ZONE", help="An IANA time zone. Default: UTC.")
    ] = "UTC",
    start: Annotated[
        str | None,
        typer.Option(
            "--start",
            metavar="LOCAL",
            help="The rule's start, 2027-03-14T09:00:00 (default: this minute).",
        ),
    ] = None,
    name: Annotated[
        str | None, typer.Option("--name", help="The schedule's name. Default: the title.")
    ] = None,
    exdate: Annotated[
        list[str] | None,
        typer.Option("--exdate", metavar="LOCAL", help="A local date-time to skip; repeat."),
    ] = None,
    catch_up: Annotated[
        str | None,
        typer.Option("--catch-up", metavar="MODE", help="After an outage: latest, skip or all."),
    ] = None,
    window: Annotated[
        int | None,
        typer.Option("--window", metavar="SECONDS", help="How far back catch-up looks (3600)."),
    ] = None,
    stream: Annotated[
        str | None,
        typer.Option("--stream", metavar="STREAM_ID", help="Send to this stream's subscribers."),
    ] = None,
    device: Annotated[
        str | None,
        typer.Option("--device", metavar="TOKEN", help="Only to the account's device with it."),
    ] = None,
    metadata: Annotated[
        list[str] | None,
        typer.Option("--metadata", metavar="KEY=VALUE", help="Extra data; repeat for each key."),
    ] = None,
    account: AccountOption = None,
    json_output: output.JsonOption = False,
    **fields: Any,
) -> None:
    """Create a schedule: each occurrence of the rule becomes a notification.

    Example: pushctl schedules create "Stand-up" --rrule "FREQ=DAILY;BYHOUR=9" --tz Europe/Berlin
    """
    if rrule is None:
        raise typer.BadParameter("the rule is required", param_hint="'--rrule'")
    template = json_body(
        title=title,
        target_device_token=device,
        metadata=metadata_fields(metadata) if metadata else None,
        **fields,
    )
    rules = {"mode": catch_up, "window": window}
    given = {k: v for k, v in rules.items() if v is not None}
    with naming_options(OPTIONS):
        created = api_for(ctx, account).client.schedules.create(
            name or title[:100],
            rrule,
            template,
            start=start,
            time_zone=tz,
            exdates=exdate,
            catch_up=given or None,
            stream_id=stream,
        )
    _show(created, json_output, f"Created schedule {created.id}.")


# The request fields of create, by the option that sets them.
OPTIONS = {
    **flags(create),
    "rrule": "--rrule",
    "timeZone": "--tz",
    "start": "--start",
    "name": "--name",
    "catchUp.mode": "--catch-up",
    "catchUp.window": "--window",
    "streamId": "--stream",
}


@app.command("list")
def list_schedules(
    ctx: typer.Context,
    state: Annotated[
        str | None, typer.Option("--state", help="ACTIVE, PAUSED or COMPLETED.")
    ] = None,
    account: AccountOption = None,
    json_output: output.JsonOption = False,
) -> None:
    """List the account's schedules, newest first.

    Example: pushctl schedules list --account alice --state ACTIVE
    """
    found = list(api_for(ctx, account).client.schedules.list(state=state))
    if json_output:
        output.print_json([to_json(s) for s in found])
        return
    if not found:
        output.say("No schedules. Create one with: pushctl schedules create TITLE --rrule RULE")
        return
    output.print_table(
        ["id", "name", "state", "rule", "zone", "next", "sent", "missed"],
        (
            [
                s.id,
                s.name,
                s.state.value,
                s.rrule,
                s.time_zone,
                output.when(s.next_occurrence_at),
                str(s.sent),
                str(s.missed),
            ]
            for s in found
        ),
    )


@app.command("show")
def show(
    ctx: typer.Context,
    schedule_id: IdArgument,
    account: AccountOption = None,
    json_output: output.JsonOption = False,
) -> None:
    """Show a schedule and its next occurrences.

    Example: pushctl schedules show --account alice sch_01JD0000000000000000000000
    """
    client = api_for(ctx, account).client
    found = client.schedules.get(schedule_id)
    if json_output:
        output.print_json(to_json(found))
        return
    output.print_record(_record(found))
    if found.state is not ScheduleState.COMPLETED:
        _occurrences(client.schedules.occurrences(schedule_id, limit=5), False)


@app.command("preview")
def preview(
    ctx: typer.Context,
    schedule_id: IdArgument,
    since: Annotated[
        str | None,
        typer.Option("--from", metavar="TIME", help="From this instant (2027-03-28T00:00:00Z)."),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", help="How many, 1 to 100.")] = 10,
    account: AccountOption = None,
    json_output: output.JsonOption = False,
) -> None:
    """The schedule's next occurrences, daylight-saving shifts marked.

    Example: pushctl schedules preview --account alice sch_01JD0000000000000000000000 --limit 5
    """
    at = None
    if since is not None:
        try:
            at = datetime.fromisoformat(since.replace("Z", "+00:00"))
        except ValueError:
            raise typer.BadParameter(
                f"{since!r} is not a timestamp", param_hint="'--from'"
            ) from None
        at = at if at.tzinfo else at.replace(tzinfo=UTC)
    with naming_options({"limit": "--limit", "from": "--from"}):
        found = api_for(ctx, account).client.schedules.occurrences(schedule_id, at, limit)
    _occurrences(found, json_output)


def _act(action: str, done: str) -> None:
    def command(
        ctx: typer.Context,
        schedule_id: IdArgument,
        account: AccountOption = None,
        json_output: output.JsonOption = False,
    ) -> None:
        method = getattr(api_for(ctx, account).client.schedules, action)
        _show(method(schedule_id), json_output, f"{done} schedule {schedule_id}.")

    command.__doc__ = (
        f"{action.title()} a schedule.\n\n"
        f"Example: pushctl schedules {action} --account alice sch_01JD0000000000000000000000"
    )
    app.command(action)(command)


_act("pause", "Paused")
_act("resume", "Resumed")
_act("trigger", "Triggered")


@app.command("delete")
def delete(
    ctx: typer.Context,
    schedule_id: IdArgument,
    account: AccountOption = None,
    json_output: output.JsonOption = False,
) -> None:
    """Delete a schedule; its occurrence not yet handed to a gateway is cancelled.

    Example: pushctl schedules delete --account alice sch_01JD0000000000000000000000
    """
    deleted = api_for(ctx, account).client.schedules.delete(schedule_id)
    output.show(deleted, json_output)
    output.say(f"Deleted schedule {schedule_id}.")
