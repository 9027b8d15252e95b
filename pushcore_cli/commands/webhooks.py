"""pushctl webhooks (event webhook endpoints) and pushctl events (the event log)."""

from __future__ import annotations

import json
import time
from typing import Annotated

import typer

from pushcore.converter import to_json
from pushcore.converter.events import EventView, WebhookView
from pushcore.domain.events import SUBSCRIPTIONS
from pushcore_cli import output
from pushcore_cli.commands import AccountOption, api_for
from pushcore_cli.errors import naming_options

app = typer.Typer(
    help="Manage the account's event webhook endpoints (signed events for senders).\n\n"
    "Example: pushctl webhooks add https://example.com/hook --event 'delivery.*'",
    no_args_is_help=True,
)
IdArgument = Annotated[
    str, typer.Argument(metavar="WEBHOOK_ID", help="The endpoint's id (whe_...).")
]
# How often `events --follow` asks for more.
FOLLOW_EVERY = 1.0


def _enabled(webhook: WebhookView) -> str:
    return "yes" if webhook.enabled else f"no ({webhook.disabled_reason or 'paused'})"


def _record(webhook: WebhookView) -> list[tuple[str, str | None]]:
    return [
        ("id", webhook.id),
        ("url", webhook.url),
        ("events", ", ".join(webhook.events)),
        ("description", webhook.description),
        ("enabled", _enabled(webhook)),
        ("created", output.when(webhook.created_at)),
    ]


@app.command("add")
def add(
    ctx: typer.Context,
    endpoint_url: Annotated[
        str, typer.Argument(metavar="URL", help="Where events are POSTed (http or https).")
    ],
    event: Annotated[
        list[str] | None,
        typer.Option(
            "--event",
            metavar="TYPE",
            help=f"Repeat for each type or prefix (default: all): {', '.join(SUBSCRIPTIONS)}.",
        ),
    ] = None,
    description: Annotated[
        str | None, typer.Option("--description", help="What the endpoint is for.")
    ] = None,
    account: AccountOption = None,
    json_output: output.JsonOption = False,
) -> None:
    """Add an endpoint and print its signing secret: shown this once only.

    Example: pushctl webhooks add https://example.com/hook --event notification.failed
    """
    with naming_options({"url": "URL", "events": "--event", "description": "--description"}):
        made = api_for(ctx, account).client.webhooks.create(
            endpoint_url, event or ["*"], description=description
        )
    output.show(made, json_output, [*_record(made), ("secret", made.secret)])
    output.warn("store this secret now: it will not be shown again.")


@app.command("list")
def list_webhooks(
    ctx: typer.Context, account: AccountOption = None, json_output: output.JsonOption = False
) -> None:
    """List the account's endpoints.

    Example: pushctl webhooks list
    """
    found = api_for(ctx, account).client.webhooks.list()
    if json_output:
        output.print_json([to_json(w) for w in found])
        return
    if not found:
        output.say("No webhook endpoints. Add one with: pushctl webhooks add URL")
        return
    output.print_table(
        ["id", "url", "events", "enabled", "created"],
        (
            [
                w.id,
                w.url,
                ", ".join(w.events),
                _enabled(w),
                output.when(w.created_at),
            ]
            for w in found
        ),
    )


@app.command("remove")
def remove(
    ctx: typer.Context,
    webhook_id: IdArgument,
    account: AccountOption = None,
    json_output: output.JsonOption = False,
) -> None:
    """Delete an endpoint; nothing more is sent to it.

    Example: pushctl webhooks remove whe_01JD0000000000000000000000
    """
    gone = api_for(ctx, account).client.webhooks.delete(webhook_id)
    output.show(gone, json_output)
    output.say(f"Removed webhook endpoint {gone.id}.")


@app.command("rotate")
def rotate(
    ctx: typer.Context,
    webhook_id: IdArgument,
    account: AccountOption = None,
    json_output: output.JsonOption = False,
) -> None:
    """Give an endpoint a new secret; the old one also signs for 24 hours.

    Example: pushctl webhooks rotate whe_01JD0000000000000000000000
    """
    rotated = api_for(ctx, account).client.webhooks.rotate_secret(webhook_id)
    output.show(rotated, json_output, [("secret", rotated.secret)])
    output.warn("the previous secret keeps signing for 24 hours; switch your receiver now.")


@app.command("test")
def send_test(
    ctx: typer.Context,
    webhook_id: IdArgument,
    account: AccountOption = None,
    json_output: output.JsonOption = False,
) -> None:
    """Send a webhook.test event to an endpoint.

    Example: pushctl webhooks test whe_01JD0000000000000000000000
    """
    sent = api_for(ctx, account).client.webhooks.test(webhook_id)
    if json_output:
        output.print_json(to_json(sent))
    else:
        output.say(
            f"Queued test event {sent.event_id}; see: pushctl webhooks attempts {webhook_id}"
        )


@app.command("attempts")
def attempts(
    ctx: typer.Context,
    webhook_id: IdArgument,
    account: AccountOption = None,
    json_output: output.JsonOption = False,
) -> None:
    """List what was sent to an endpoint, newest first, with each event's latest try.

    Example: pushctl webhooks attempts whe_01JD0000000000000000000000
    """
    found = list(api_for(ctx, account).client.webhooks.attempts(webhook_id))
    if json_output:
        output.print_json([to_json(a) for a in found])
        return
    output.print_table(
        ["event", "type", "status", "http", "ms", "tried", "next"],
        (
            [
                a.event_id,
                a.type,
                a.status.value,
                None if a.response_status is None else str(a.response_status),
                None if a.duration_ms is None else str(a.duration_ms),
                output.when(a.attempted_at),
                output.when(a.next_attempt_at),
            ]
            for a in found
        ),
    )


def _show(event: EventView, json_output: bool) -> None:
    if json_output:
        # One object a line, so a follower can be read line by line.
        typer.echo(json.dumps(to_json(event), ensure_ascii=False, separators=(",", ":")))
        return
    data = to_json(event.data)
    about = " ".join(f"{k}={v}" for k, v in data.items() if v is not None)
    # A result, on stdout (a status line would go to stderr).
    typer.echo(f"{output.when(event.timestamp)}  {event.id}  {event.type}  {about}")


def events(
    ctx: typer.Context,
    event_type: Annotated[
        list[str] | None,
        typer.Option("--type", metavar="TYPE", help="Only events of this type (repeatable)."),
    ] = None,
    after: Annotated[
        str | None, typer.Option("--after", metavar="EVENT_ID", help="Only events after this one.")
    ] = None,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing new events until interrupted.")
    ] = False,
    account: AccountOption = None,
    json_output: output.JsonOption = False,
) -> None:
    """Print the account's events, oldest first (one JSON object a line with --json).

    Example: pushctl events --type notification.failed --follow
    """
    client = api_for(ctx, account).client
    last = after
    try:
        while True:
            with naming_options({"type": "--type", "after": "--after"}):
                shown = 0
                for event in client.events.list(type=event_type, after=last):
                    _show(event, json_output)
                    last, shown = event.id, shown + 1
            if not follow:
                return
            if not shown:
                time.sleep(FOLLOW_EVERY)
    except KeyboardInterrupt:
        return
