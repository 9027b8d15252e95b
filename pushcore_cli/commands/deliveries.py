"""pushctl notifications deliveries: a notification's deliveries, device by device."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from pushcore.domain.receipts import PublicStatus
from pushcore_cli import output
from pushcore_cli.commands import AccountOption, api_for
from pushcore_cli.errors import naming_options
from pushcore_cli.paging import PAGE_OPTIONS, CursorOption, LimitOption, page_size, print_page

if TYPE_CHECKING:
    # Only its rows' type: the view loads with the client's answer (a send does without).
    from pushcore.converter.deliveries import DeliveryView

STATUSES = ", ".join(s.value for s in PublicStatus)


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


def _row(d: DeliveryView) -> list[str | None]:
    return [
        _device(d),
        None if d.platform is None else d.platform.value,
        d.status.value,
        # Each its own: a local-time send's fall due in each recipient's zone.
        output.when(d.due_at),
        str(d.attempts),
        output.when(d.delivered_at),
        _what_happened(d),
    ]


def deliveries(
    ctx: typer.Context,
    notification_id: Annotated[
        str, typer.Argument(metavar="NOTIFICATION_ID", help="The notification's id (ntf_...).")
    ],
    status: Annotated[
        str | None,
        typer.Option("--status", metavar="STATUS", help=f"Only this status: {STATUSES}."),
    ] = None,
    limit: LimitOption = None,
    cursor: CursorOption = None,
    account: AccountOption = None,
    json_output: output.JsonOption = False,
) -> None:
    """List a notification's deliveries, device by device.

    Each one's status, due time and attempts, and when it was delivered, displayed and opened.
    Another account's device (a stream send's subscriber) is not named.

    Example: pushctl notifications deliveries --account alice ntf_01JD0000000000000000000000
    """
    with naming_options(PAGE_OPTIONS):
        api = api_for(ctx, account)
        page = api.client.notifications.deliveries_page(
            notification_id, status, page_size(limit), cursor
        )
    print_page(
        page,
        json_output,
        empty="No deliveries.",
        headers=["device", "platform", "status", "due", "attempts", "delivered", "seen / why"],
        row=_row,
        again=f"pushctl notifications deliveries{api.as_account} {notification_id}",
        status=status,
        limit=limit,
    )
