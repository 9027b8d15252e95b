"""pushctl notifications edit and replace: change what was not sent, replace what was."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

import typer

from pushcore.domain.inputs import NewNotification
from pushcore_cli import output
from pushcore_cli.commands import AccountOption, api_for
from pushcore_cli.commands.notifications import (
    DELAY_HELP,
    IdArgument,
    delay_fields,
    device_token,
    metadata_fields,
    record,
)
from pushcore_cli.errors import naming_options
from pushcore_cli.expiry import TTL_FIELDS, TtlOption, ttl_seconds
from pushcore_cli.fields import field_options, flags
from pushcore_cli.times import HELP as AT_HELP
from pushcore_cli.times import resolve_at

# The fields these commands set by options of their own (the rest are derived).
OWN = {
    "delay": "delay",
    "custom_delay": "delay",
    "scheduled_at": "at",
    "target_device_token": "device",
    "metadata": "metadata",
    **TTL_FIELDS,
}
Delay = Annotated[
    str | None, typer.Option("--delay", metavar="DURATION", help=f"Send after {DELAY_HELP}.")
]
At = Annotated[str | None, typer.Option("--at", metavar="TIME", help=f"Send at {AT_HELP}.")]
DeviceOption = Annotated[
    str | None,
    typer.Option("--device", metavar="DEVICE", help="Only to this device: its id or token."),
]
Metadata = Annotated[
    list[str] | None,
    typer.Option("--metadata", metavar="KEY=VALUE", help="Replaces the metadata; repeatable."),
]


def _changes(
    ctx: typer.Context,
    account: str | None,
    fields: dict[str, Any],
    timing: tuple[str | None, str | None],
    device: str | None,
    metadata: list[str] | None,
    ttl: timedelta | None,
) -> tuple[Any, dict[str, Any]]:
    """The API and the client's keyword arguments the options ask for."""
    delay, at = timing
    if delay is not None and at is not None:
        raise typer.BadParameter("give --delay or --at, not both", param_hint="'--at'")
    changes = {name: value for name, value in fields.items() if value is not None}
    if ttl is not None:
        changes["ttl"] = ttl_seconds(ttl)
    if delay is not None:
        changes.update(delay_fields(delay))
    if at is not None:
        changes["scheduled_at"] = resolve_at(at, datetime.now(UTC))[0]
    if metadata:
        changes["metadata"] = metadata_fields(metadata)
    api = api_for(ctx, account)
    if device is not None:
        changes["target_device_token"] = device_token(api, device)
    return api, changes


@field_options(NewNotification, OWN)
def edit(
    ctx: typer.Context,
    notification_id: IdArgument,
    delay: Delay = None,
    at: At = None,
    device: DeviceOption = None,
    metadata: Metadata = None,
    ttl: TtlOption = None,
    if_revision: Annotated[
        int | None,
        typer.Option(
            "--if-revision", metavar="N", help="Only if it is at revision N (else it fails)."
        ),
    ] = None,
    account: AccountOption = None,
    json_output: output.JsonOption = False,
    **fields: Any,
) -> None:
    """Edit a notification no gateway has taken yet (its revision goes up by one).

    Example: pushctl notifications edit ntf_01JD0000000000000000000000 --title "v8" --if-revision 1
    """
    api, changes = _changes(ctx, account, fields, (delay, at), device, metadata, ttl)
    if not changes:
        raise typer.BadParameter("give at least one option to change", param_hint="OPTIONS")
    with naming_options(EDIT_OPTIONS):
        edited = api.client.notifications.update(
            notification_id, if_revision=if_revision, **changes
        )
    output.show(edited, json_output, record(edited))
    output.say(f"Edited notification {notification_id} (revision {edited.revision}).")


@field_options(NewNotification, OWN)
def replace(
    ctx: typer.Context,
    notification_id: IdArgument,
    delay: Delay = None,
    at: At = None,
    device: DeviceOption = None,
    metadata: Metadata = None,
    ttl: TtlOption = None,
    account: AccountOption = None,
    json_output: output.JsonOption = False,
    **fields: Any,
) -> None:
    """Replace a notification, sent or not, by a new one to the same devices and inboxes
    (the options given; the original's for the rest; now unless --delay or --at).

    Example: pushctl notifications replace ntf_01JD0000000000000000000000 --body "Build failed"
    """
    api, changes = _changes(ctx, account, fields, (delay, at), device, metadata, ttl)
    with naming_options(EDIT_OPTIONS):
        new = api.client.notifications.replace(notification_id, **changes)
    output.show(new, json_output, record(new))
    output.say(f"Replaced notification {notification_id} with {new.id}.")


EDIT_OPTIONS = {**flags(edit), "If-Match": "--if-revision"}
