"""pushctl devices: register (idempotent), list, remove."""

from __future__ import annotations

from typing import Annotated

import typer

from pushcore.converter import DeviceView, to_json
from pushcore.domain.model import Platform
from pushcore_cli import output
from pushcore_cli.commands import AccountOption, api_for
from pushcore_cli.errors import naming_options

OPTIONS = {
    "platform": "--platform",
    "token": "--token",
    "name": "--name",
    "keys.p256dh": "--p256dh",
    "keys.auth": "--auth",
    "keys": "--p256dh / --auth",
}

app = typer.Typer(
    help="Manage an account's devices.\n\nExample: pushctl devices list --account alice",
    no_args_is_help=True,
)


def _record(device: DeviceView) -> list[tuple[str, str | None]]:
    # Only the prefix is ever shown (as by the HTTP API): the ellipsis says so.
    masked = device.token_prefix + "…"
    return [
        ("id", device.id),
        ("name", device.name),
        ("platform", device.platform.value),
        ("token", masked),
        ("active", output.yes_no(device.is_active)),
        ("created", output.when(device.created_at)),
        ("last delivered", output.when(device.last_delivered_at)),
    ]


@app.command("add")
def add(
    ctx: typer.Context,
    platform: Annotated[Platform, typer.Option("--platform", help="How the device is reached.")],
    token: Annotated[
        str,
        typer.Option(
            "--token",
            help="APNs token (hex), FCM registration token, Web Push endpoint or webhook URL.",
        ),
    ],
    name: Annotated[str | None, typer.Option("--name", help="A label for the device.")] = None,
    p256dh: Annotated[
        str | None, typer.Option("--p256dh", help="Web Push only: the subscription's p256dh key.")
    ] = None,
    auth: Annotated[
        str | None, typer.Option("--auth", help="Web Push only: the subscription's auth secret.")
    ] = None,
    account: AccountOption = None,
    json_output: output.JsonOption = False,
) -> None:
    """Register a device; registering the same token again refreshes and reactivates it.

    Example: pushctl devices add --account alice --platform webhook --token https://example.com/hook
    """
    if (p256dh is None) != (auth is None):
        raise typer.BadParameter(
            "--p256dh and --auth go together", param_hint="'--p256dh' / '--auth'"
        )
    keys = None if p256dh is None or auth is None else {"p256dh": p256dh, "auth": auth}
    with naming_options(OPTIONS):
        client = api_for(ctx, account).client
        # The API tells a new device (201) from a refreshed one (200); the client's
        # result does not, the list before it does.
        known = {d.id for d in client.devices.list()}
        device = client.devices.register(platform, token, name=name, keys=keys)
    output.show(device, json_output, _record(device))
    if device.id not in known:
        output.say(f"Registered device {device.id}.")
    else:
        output.say(f"Device {device.id} was already registered, refreshed.")


@app.command("list")
def list_devices(
    ctx: typer.Context,
    account: AccountOption = None,
    json_output: output.JsonOption = False,
) -> None:
    """List the account's devices, deactivated ones included.

    Example: pushctl devices list --account alice
    """
    api = api_for(ctx, account)
    devices = api.client.devices.list()
    if json_output:
        output.print_json([to_json(d) for d in devices])
        return
    if not devices:
        output.say(f"No devices. Register one with: pushctl devices add{api.as_account} ...")
        return
    records = [_record(d) for d in devices]
    output.print_table(
        [field for field, _ in records[0]], ([value for _, value in r] for r in records)
    )


@app.command("remove")
def remove(
    ctx: typer.Context,
    device_id: Annotated[
        str, typer.Argument(metavar="DEVICE_ID", help="The device's id (dev_...).")
    ],
    account: AccountOption = None,
    json_output: output.JsonOption = False,
) -> None:
    """Remove a device: it receives nothing more (registering its token again adds it anew).

    Example: pushctl devices remove --account alice dev_01JD0000000000000000000000
    """
    removed = api_for(ctx, account).client.devices.remove(device_id)
    output.show(removed, json_output)
    output.say(f"Removed device {device_id}.")
