"""pushctl listen: follow the account's live channel and print each notification.

It registers a ``live`` device (no gateway, no URL, no private-network
setting: its deliveries succeed once the notification is in the inbox), so
the account counts as reached, follows GET /api/inbox/events (in this
process over the local data, or at ``--url``), and removes the device on
exit. ``--webhook`` keeps the older local webhook receiver
(``listen_webhook.py``).
"""

from __future__ import annotations

import contextlib
import json
import secrets
from datetime import UTC, datetime
from typing import Annotated

import typer

from pushcore.converter import InboxEntryView, to_json
from pushcore.domain.errors import NotFound
from pushcore.domain.model import Platform
from pushcore_cli import output
from pushcore_cli.commands import AccountOption, Api, api_for
from pushcore_cli.commands.listen_output import describe, interrupt_on_term
from pushcore_cli.commands.listen_webhook import DEFAULT_NAME, listen_webhook

__all__ = ["describe", "listen"]


def listen(
    ctx: typer.Context,
    port: Annotated[
        int,
        typer.Option(
            "--port", min=0, max=65535, help="With --webhook: the port; 0 picks a free one."
        ),
    ] = 0,
    host: Annotated[
        str, typer.Option("--host", help="With --webhook: the address to listen on.")
    ] = "127.0.0.1",
    name: Annotated[
        str, typer.Option("--name", help="The name of the device it registers.")
    ] = DEFAULT_NAME,
    once: Annotated[
        bool, typer.Option("--once", help="Exit after the first notification.")
    ] = False,
    webhook: Annotated[
        bool,
        typer.Option(
            "--webhook",
            help="Receive as a local webhook device instead (signatures checked; needs"
            " PUSHCORE_ALLOW_PRIVATE_NETWORKS=true for a loopback address).",
        ),
    ] = False,
    account: AccountOption = None,
    json_output: Annotated[
        bool,
        typer.Option("--json", help="Print each notification as one line of JSON."),
    ] = False,
) -> None:
    """Receive notifications here: follow the live channel and print what arrives.

    A live device is registered for as long as it runs and removed on exit
    (Ctrl-C, SIGTERM, or after one with --once). Notifications come from the
    delivery engine of pushctl serve on the same data, or of the server at --url.

    Example: pushctl listen --account alice
    """
    api = api_for(ctx, account)
    if webhook:
        listen_webhook(api, port, host, name, once, json_output)
        return
    _listen_live(api, name, once, json_output)


def _listen_live(api: Api, name: str, once: bool, json_output: bool) -> None:
    # A token of its own per run: two listeners of one account are two devices.
    token = f"pushctl-listen-{secrets.token_hex(8)}"
    device = api.client.devices.register(Platform.LIVE, token, name=name).id
    restore = interrupt_on_term()
    events = api.client.inbox.events()
    try:
        output.say(
            f"Listening on the live channel as device {device} of {api.who}"
            + ("; exits after one notification." if once else "; Ctrl-C to stop.")
        )
        for event in events:
            if not isinstance(event, InboxEntryView):
                continue  # reads and dismissals of other devices
            entry = to_json(event)
            if json_output:
                typer.echo(json.dumps(entry, ensure_ascii=False, separators=(",", ":")))
            else:
                typer.echo(describe(entry, event.delivered_at or datetime.now(UTC)))
            if once:
                break
    except KeyboardInterrupt:
        pass
    finally:
        restore()
        with contextlib.suppress(Exception):
            events.close()  # the channel's connection
        # Already removed by someone else: the goal is met all the same.
        with contextlib.suppress(NotFound):
            api.client.devices.remove(device)
        output.say(f"Removed device {device}.")
