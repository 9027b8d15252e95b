"""pushctl notifications deliveries: a notification's deliveries, device by device."""

from __future__ import annotations

from typing import Annotated

import typer

from pushcore.converter import to_json
from pushcore.converter.deliveries import DeliveryView
from pushcore.domain.receipts import PublicStatus
from pushcore_cli import output
from pushcore_cli.commands import AccountOption, api_for
from pushcore_cli.errors import naming_options

STATUSES = ", ".join(s.value for s in PublicStatus)
OPTIONS = {"status": "--status", "limit": "--limit", "cursor": "--cursor"}
DEFAULT_LIMIT = 20  # the API's page size when none is asked for


def _device(d: DeliveryView) -> str:
    if d.device_id is None:
        return "(another account's)"
    return d.device_id if d.device_name is None else f"{d.device_name} ({d.device_id})"


def _what_happened(d: DeliveryView) -> str | None:
    seen = [
        f"{word} {output.when(at)}"
        for word, at in (("opened", d.opened_at), ("displayed", d.displayed_at))
        if at is not None
    ]
    return ", ".join(seen) or d.failure_reason


def deliveries(
    ctx: typer.Context,
    notification_id: Annotated[
        str, typer.Argument(metavar="NOTIFICATION_ID", help="The notification's id (ntf_...).")
    ],
    status: Annotated[
        str | None,
        typer.Option("--status", metavar="STATUS", help=f"Only this status: {STATUSES}."),
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option(
            "--limit", metavar="N", help=f"At most N (1 to 100, default {DEFAULT_LIMIT})."
        ),
    ] = None,
    cursor: Annotated[
        str | None,
        typer.Option("--cursor", help="Continue after a previous page (its nextCursor)."),
    ] = None,
    account: AccountOption = None,
    json_output: output.JsonOption = False,
) -> None:
    """List a notification's deliveries, device by device.

    Each one's status, due time and attempts, and when it was delivered, displayed and opened.
    Another account's device (a stream send's subscriber) is not named.

    Example: pushctl notifications deliveries --account alice ntf_01JD0000000000000000000000
    """
    with naming_options(OPTIONS):
        api = api_for(ctx, account)
        size = DEFAULT_LIMIT if limit is None else limit
        page = api.client.notifications.deliveries_page(notification_id, status, size, cursor)
    if json_output:
        output.print_json(to_json(page))
        return
    if not page.items:
        output.say("No deliveries.")
        return
    output.print_table(
        ["device", "platform", "status", "due", "attempts", "delivered", "seen / why"],
        (
            [
                _device(d),
                None if d.platform is None else d.platform.value,
                d.status.value,
                # Each its own: a local-time send's fall due in each recipient's zone.
                output.when(d.due_at),
                str(d.attempts),
                output.when(d.delivered_at),
                _what_happened(d),
            ]
            for d in page.items
        ),
    )
    if page.next_cursor is not None:
        again = f"pushctl notifications deliveries{api.as_account} {notification_id}"
        if status is not None:
            again += f" --status {status.upper()}"
        if limit is not None:
            again += f" --limit {limit}"
        output.say(f"More: {again} --cursor {page.next_cursor}")
