"""pushctl send, and pushctl notifications: list, show, cancel, stats, deliveries (edit and
replace: commands/edits.py)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

import typer

from pushcore.converter import (
    DeliveryCountsView,
    NotificationCreatedView,
    NotificationDeliveriesView,
    NotificationView,
    format_timestamp,
    to_json,
)
from pushcore.domain.errors import DeviceNotFound
from pushcore.domain.inputs import NewNotification
from pushcore.domain.scheduling import Delay, parse_duration
from pushcore.domain.states import NotificationStatus
from pushcore_cli import local_send, output
from pushcore_cli.commands import AccountOption, Api, api_for, batch, deliveries
from pushcore_cli.errors import naming_options
from pushcore_cli.expiry import TTL_FIELDS, TtlOption, ttl_seconds
from pushcore_cli.fields import field_options, flags
from pushcore_cli.localtime import (
    LOCAL_TIME_FIELDS,
    LOCAL_TIME_FLAGS,
    DateOption,
    LocalTimeOption,
    deliver_at,
)
from pushcore_cli.paging import PAGE_OPTIONS, CursorOption, LimitOption, page_size, print_page
from pushcore_cli.times import HELP as AT_HELP
from pushcore_cli.times import resolve_at, said

app = typer.Typer(
    help=(
        "Inspect and cancel an account's notifications (send them with pushctl send).\n\n"
        "Example: pushctl notifications list --account alice"
    ),
    no_args_is_help=True,
)

PRESETS = ", ".join(d.value for d in Delay if d is not Delay.CUSTOM)
# What --delay takes is what the API's `delay` takes: one duration syntax.
DELAY_HELP = f"a duration from 1s to 30d ({PRESETS}, 90s, 2h, 1d or a number of seconds)"
STATUSES = ", ".join(s.value for s in NotificationStatus)

IdArgument = Annotated[
    str, typer.Argument(metavar="NOTIFICATION_ID", help="The notification's id (ntf_...).")
]


def delay_fields(text: str) -> dict[str, Any]:
    """``--delay`` as the client's keyword arguments: the duration as the API takes it."""
    if parse_duration(text.strip()) is None:
        raise typer.BadParameter(
            f"{text!r} is not a delay (use {DELAY_HELP})", param_hint="'--delay'"
        )
    # Out-of-range durations are the service's to refuse (named --delay by OPTIONS).
    return {"delay": text.strip()}


def metadata_fields(pairs: Sequence[str]) -> dict[str, str]:
    """``--metadata k=v`` options as a mapping; a usage error for a pair without ``=``."""
    metadata: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise typer.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="'--metadata'")
        if key in metadata:
            # Two values for one key is a slip, not a choice: refuse rather than guess.
            raise typer.BadParameter(f"{key!r} is given twice", param_hint="'--metadata'")
        metadata[key] = value
    return metadata


def _asked_text(n: NotificationView) -> str:
    """What the sender asked for: a delay, or (when the due time is not the creation time
    plus the stored delay) an exact time, which the stored default delay would hide."""
    if n.custom_delay is not None:
        seconds: int | None = n.custom_delay
        delay = f"delay {n.custom_delay}s (custom)"
    else:
        seconds = parse_duration(n.delay)
        delay = f"delay {n.delay}"
    due_by_delay = n.created_at + timedelta(seconds=seconds or 0)
    if seconds is not None and abs(n.scheduled_at - due_by_delay) <= timedelta(seconds=1):
        return delay
    return f"at {format_timestamp(n.scheduled_at)}"


def _counts_text(counts: DeliveryCountsView | None) -> str | None:
    if counts is None:
        return None
    text = f"pending {counts.pending}, delivered {counts.delivered}, failed {counts.failed}"
    if isinstance(counts, NotificationDeliveriesView):
        text += f", opened {counts.opened}"
    return text


def _local_text(n: NotificationView) -> str | None:
    """A local-time send's time: ``09:00 on 2026-12-24, each recipient's clock``."""
    local = n.deliver_at
    if local is None:
        return None
    day = "" if local.date is None else f" on {local.date}"
    return f"{local.local_time}{day}, each recipient's clock"


def record(n: NotificationView) -> list[tuple[str, str | None]]:
    stream = None if n.stream is None else f"{n.stream.name} ({n.stream.code})"
    metadata = ", ".join(f"{k}={v}" for k, v in n.metadata.items()) or None
    return [
        ("id", n.id),
        ("status", n.status.value),
        ("title", n.title),
        ("body", n.body or None),
        # Delays are seconds long: show the exact time, not the minute.
        ("scheduled", format_timestamp(n.scheduled_at)),
        ("asked", _asked_text(n)),
        ("local time", _local_text(n)),
        ("priority", n.priority.value),
        ("sound", n.sound.value),
        ("icon style", n.icon_style.value),
        ("target device", n.target_device_token),
        ("sender name", n.sender_name),
        ("sender icon", n.sender_icon),
        ("stream", stream),
        ("metadata", metadata),
        ("devices targeted", str(n.devices_targeted)),
        ("collapse key", n.collapse_key),
        ("revision", str(n.revision)),
        ("deliveries", _counts_text(n.deliveries)),
        ("failure reason", n.failure_reason),
        ("expires", None if n.expires_at is None else format_timestamp(n.expires_at)),
        ("withdrawn", None if n.withdrawn_at is None else format_timestamp(n.withdrawn_at)),
        ("created", format_timestamp(n.created_at)),
        ("settled", None if n.settled_at is None else format_timestamp(n.settled_at)),
    ]


# The fields send sets by options of its own; every other field is an option derived
# from NewNotification (pushcore_cli/fields.py).
OWN = {
    "title": "title",
    "delay": "delay",
    "custom_delay": "delay",
    "scheduled_at": "at",
    "target_device_token": "device",
    "metadata": "metadata",
    **TTL_FIELDS,
    **LOCAL_TIME_FIELDS,
}


@field_options(NewNotification, OWN)
def send(
    ctx: typer.Context,
    title: Annotated[
        str | None,
        typer.Argument(
            metavar="TITLE", help="The title (1 to 200 characters); not with --from-file."
        ),
    ] = None,
    delay: Annotated[
        str | None,
        typer.Option(
            "--delay",
            metavar="DURATION",
            help=f"Send after {DELAY_HELP}. Default: 5s.",
        ),
    ] = None,
    at: Annotated[
        str | None,
        typer.Option(
            "--at",
            metavar="TIME",
            help=f"Send at {AT_HELP} (a past time means now).",
        ),
    ] = None,
    device: Annotated[
        str | None,
        typer.Option(
            "--device",
            metavar="DEVICE",
            help="Only to this device of the account: its id (dev_...) or its token.",
        ),
    ] = None,
    metadata: Annotated[
        list[str] | None,
        typer.Option(
            "--metadata", metavar="KEY=VALUE", help="Extra data for the app; repeat for each key."
        ),
    ] = None,
    ttl: TtlOption = None,
    local_time: LocalTimeOption = None,
    on_date: DateOption = None,
    from_file: Annotated[
        str | None,
        typer.Option(
            "--from-file",
            metavar="FILE",
            help=(
                "Send many: one JSON object per line with the API's fields (title, body,"
                " delay, ...), '-' for stdin; sent 500 at a time, each batch all or nothing."
            ),
        ),
    ] = None,
    account: AccountOption = None,
    json_output: output.JsonOption = False,
    **fields: Any,
) -> None:
    """Schedule a notification to the account's devices (or many, from a file).

    Example: pushctl send "Build passed" --account alice --body "main is green" --delay 30s
    """
    if from_file is not None:
        given = (title, delay, at, device, metadata, ttl, local_time, *fields.values())
        if any(v is not None for v in given):
            raise typer.BadParameter(
                "give TITLE and its options, or --from-file, not both", param_hint="'--from-file'"
            )
        lines = batch.read_lines(from_file)
        sent = batch.send_lines(api_for(ctx, account), lines)
        batch.show(sent, json_output)
        output.say(f"Queued {len(sent)} notifications.")
        return
    if title is None:
        raise typer.BadParameter("a TITLE is required (or --from-file)", param_hint="'TITLE'")
    if delay is not None and at is not None:
        raise typer.BadParameter("give --delay or --at, not both", param_hint="'--at'")
    timings = [name for name, v in (("--delay", delay), ("--at", at)) if v is not None]
    local = deliver_at(local_time, on_date, *timings)
    scheduled_at, local_at = (None, False) if at is None else resolve_at(at, datetime.now(UTC))
    options: dict[str, Any] = {
        **fields,
        "scheduled_at": scheduled_at,
        "metadata": metadata_fields(metadata) if metadata else None,
        "ttl": ttl_seconds(ttl),
        "deliver_at": local,
    }
    if delay is not None:
        options.update(delay_fields(delay))
    with naming_options(OPTIONS):
        api = api_for(ctx, account)
        if device is not None:
            options["target_device_token"] = device_token(api, device)
        try:
            created = local_send.create(api, title, options)
        except DeviceNotFound:
            # The API's message names its field (targetDeviceToken): name the option.
            message = f"--device: the account has no device {device}"
            if api.local is None and (device or "").startswith("dev_"):
                message += (
                    " (with --url, --device takes the device's token: the API never shows"
                    " tokens, so ids are resolved only on the local data)"
                )
            raise DeviceNotFound(message) from None
    _show_created(api, created, json_output)
    if at is not None and local_at and scheduled_at is not None:
        output.say(said(at, scheduled_at))


# The request and query fields of these commands, by the option that sets them.
OPTIONS = {**flags(send), **LOCAL_TIME_FLAGS, **PAGE_OPTIONS}


def _show_created(api: Api, created: NotificationCreatedView, json_output: bool) -> None:
    output.show(
        created,
        json_output,
        [
            ("id", created.id),
            ("status", created.status.value),
            ("scheduled", format_timestamp(created.scheduled_at)),
            ("devices targeted", str(created.devices_targeted)),
        ],
    )
    api.warn_without_engine()
    if created.devices_targeted == 0:
        output.warn(
            "no active device to deliver to yet: the notification waits up to 24 hours after"
            f" it is due for one (pushctl devices add{api.as_account} ...)."
        )
    else:
        output.say(f"Queued notification {created.id}.")


def device_token(api: Api, device: str) -> str:
    """The token of ``--device``: a device id (``dev_...``) of the account, or a token.

    Ids are resolved on the local data only: the API never shows a device's token.
    """
    if api.local is None or api.account is None or not device.startswith("dev_"):
        return device
    found = (d.token for d in api.local.devices.list(api.account) if d.id == device)
    # Not an id of the account's devices: a token, whose device the service looks up.
    return next(found, device)


@app.command("list")
def list_notifications(
    ctx: typer.Context,
    status: Annotated[
        str | None,
        typer.Option("--status", metavar="STATUS", help=f"Only this status: {STATUSES}."),
    ] = None,
    limit: LimitOption = None,
    cursor: CursorOption = None,
    account: AccountOption = None,
    json_output: output.JsonOption = False,
) -> None:
    """List the account's notifications, newest first, a page at a time.

    Example: pushctl notifications list --account alice --status QUEUED --limit 10
    """
    with naming_options(OPTIONS):
        api = api_for(ctx, account)
        page = api.client.notifications.page(status, page_size(limit), cursor)
    print_page(
        page,
        json_output,
        empty=f"No notifications. Send one with: pushctl send TITLE{api.as_account}",
        headers=["id", "status", "title", "scheduled", "devices", "created"],
        row=lambda n: [
            n.id,
            n.status.value,
            n.title,
            format_timestamp(n.scheduled_at),
            str(n.devices_targeted),
            output.when(n.created_at),
        ],
        again=f"pushctl notifications list{api.as_account}",
        status=status,
        limit=limit,
    )


@app.command("show")
def show(
    ctx: typer.Context,
    notification_id: IdArgument,
    account: AccountOption = None,
    json_output: output.JsonOption = False,
) -> None:
    """Show a notification: every field it was sent with, and how its deliveries stand.

    Example: pushctl notifications show --account alice ntf_01JD0000000000000000000000
    """
    found = api_for(ctx, account).client.notifications.get(notification_id)
    output.show(found, json_output, record(found))


@app.command("cancel")
def cancel(
    ctx: typer.Context,
    notification_id: IdArgument,
    account: AccountOption = None,
    json_output: output.JsonOption = False,
) -> None:
    """Cancel a notification that no gateway has been handed yet.

    Example: pushctl notifications cancel --account alice ntf_01JD0000000000000000000000
    """
    cancelled = api_for(ctx, account).client.notifications.cancel(notification_id)
    output.show(cancelled, json_output, record(cancelled))
    output.say(f"Cancelled notification {notification_id}.")


@app.command("withdraw")
def withdraw(
    ctx: typer.Context,
    notification_id: IdArgument,
    account: AccountOption = None,
    json_output: output.JsonOption = False,
) -> None:
    """Take a notification back from every inbox and device it reached (cancel it if none).

    Example: pushctl notifications withdraw --account alice ntf_01JD0000000000000000000000
    """
    withdrawn = api_for(ctx, account).client.notifications.withdraw(notification_id)
    output.show(withdrawn, json_output, record(withdrawn))
    output.say(f"Withdrew notification {notification_id}.")


@app.command("stats")
def stats(
    ctx: typer.Context,
    account: AccountOption = None,
    json_output: output.JsonOption = False,
) -> None:
    """Count the account's notifications by status, its deliveries, and the last 24 hours.

    Example: pushctl notifications stats --account alice
    """
    found = api_for(ctx, account).client.notifications.stats()
    if json_output:
        output.print_json(to_json(found))
        return
    deliveries = found.deliveries
    last = found.last_24h
    output.print_record(
        [
            ("total", str(found.total)),
            *((status, str(count)) for status, count in found.by_status.items()),
            (
                "deliveries",
                f"delivered {deliveries.delivered}, failed {deliveries.failed},"
                f" pending {deliveries.pending}",
            ),
            (
                "last 24 hours",
                f"created {last.created}, delivered {last.delivered}, failed {last.failed}",
            ),
        ]
    )


def _register_edits() -> None:
    # Here, at the end: edits.py builds on this module's helpers.
    from pushcore_cli.commands import edits

    app.command("edit")(edits.edit)
    app.command("replace")(edits.replace)


_register_edits()
app.command("deliveries")(deliveries.deliveries)
