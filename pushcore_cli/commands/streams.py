"""pushctl streams: channels with a shareable code, sends to their subscribers, subscriptions."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from pushcore.converter import (
    lookup_json,
    send_result_json,
    stream_json,
    structure_request,
    subscription_json,
)
from pushcore.domain.inputs import NewStream, StreamSend, Subscribe
from pushcore.domain.model import Priority, Sound, StreamView, Subscription
from pushcore_cli import output
from pushcore_cli.commands import AccountOption, acting_as

app = typer.Typer(
    help=(
        "Streams: channels with a shareable code. Their creator sends to every subscriber;"
        " other accounts subscribe by the code.\n\n"
        "Example: pushctl streams create --account alice --name Deploys"
    ),
    no_args_is_help=True,
)

StreamIdArgument = Annotated[
    str, typer.Argument(metavar="STREAM_ID", help="The stream's id (str_...).")
]
CodeArgument = Annotated[
    str, typer.Argument(metavar="CODE", help="The stream's shareable code, e.g. falcon-7k2q.")
]


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _record(view: StreamView) -> list[tuple[str, str | None]]:
    s = view.stream
    return [
        ("id", s.id),
        ("name", s.name),
        ("code", s.code),
        ("description", s.description or None),
        ("icon url", s.icon_url),
        ("subscribers", str(view.subscribers)),
        ("created", output.when(s.created_at)),
    ]


def _subscription_record(
    subscription: Subscription, view: StreamView
) -> list[tuple[str, str | None]]:
    s = view.stream
    return [
        ("id", subscription.id),
        ("stream", s.name),
        ("code", s.code),
        ("stream id", s.id),
        ("description", s.description or None),
        ("subscribers", str(view.subscribers)),
        ("subscribed", output.when(subscription.created_at)),
    ]


@app.command("create")
def create(
    ctx: typer.Context,
    account: AccountOption,
    name: Annotated[str, typer.Option("--name", help="The stream's name (1 to 50 characters).")],
    description: Annotated[
        str | None,
        typer.Option("--description", help="What subscribers get (up to 200 characters)."),
    ] = None,
    icon_url: Annotated[
        str | None,
        typer.Option(
            "--icon-url", metavar="URL", help="An http(s) URL of a PNG or JPEG (at most 5 MB)."
        ),
    ] = None,
    json_output: output.JsonOption = False,
) -> None:
    """Create a stream and print its shareable code (the free plan allows 3 streams).

    Example: pushctl streams create --account alice --name Deploys --description "main deploys"
    """
    # The same JSON body the HTTP API takes, so both front doors validate alike.
    body: dict[str, Any] = {"name": name}
    if description is not None:
        body["description"] = description
    if icon_url is not None:
        body["iconUrl"] = icon_url
    request = structure_request(NewStream, body)
    services = acting_as(ctx, account)
    view = services.streams.create(account, request)
    if json_output:
        output.print_json(stream_json(view))
    else:
        output.print_record(_record(view))
    output.say(
        f"Created stream {view.stream.id} with code {view.stream.code}; others subscribe with:"
        f" pushctl streams subscribe {view.stream.code} --account ACCOUNT"
    )


@app.command("list")
def list_streams(
    ctx: typer.Context, account: AccountOption, json_output: output.JsonOption = False
) -> None:
    """List the account's streams, newest first, with their subscriber counts.

    Example: pushctl streams list --account alice
    """
    services = acting_as(ctx, account)
    views = services.streams.list(account)
    if json_output:
        output.print_json([stream_json(v) for v in views])
        return
    if not views:
        output.say(f"No streams. Create one with: pushctl streams create --account {account} ...")
        return
    output.print_table(
        ["id", "name", "code", "subscribers", "description", "created"],
        (
            [
                v.stream.id,
                v.stream.name,
                v.stream.code,
                str(v.subscribers),
                v.stream.description or None,
                output.when(v.stream.created_at),
            ]
            for v in views
        ),
    )


@app.command("delete")
def delete(
    ctx: typer.Context,
    stream_id: StreamIdArgument,
    account: AccountOption,
    json_output: output.JsonOption = False,
) -> None:
    """Delete a stream and every subscription to it; notifications sent keep their history.

    Example: pushctl streams delete --account alice str_01JD0000000000000000000000
    """
    services = acting_as(ctx, account)
    services.streams.delete(account, stream_id)
    if json_output:
        output.print_json({"success": True, "id": stream_id})
    output.say(f"Deleted stream {stream_id} and its subscriptions.")


@app.command("send")
def send(
    ctx: typer.Context,
    stream_id: StreamIdArgument,
    account: AccountOption,
    title: Annotated[str, typer.Option("--title", help="The title (1 to 200 characters).")],
    body: Annotated[
        str | None, typer.Option("--body", help="The text under the title (up to 2000 chars).")
    ] = None,
    sound: Annotated[Sound | None, typer.Option("--sound", help="The sound it plays.")] = None,
    priority: Annotated[
        Priority | None, typer.Option("--priority", help="How urgently it interrupts.")
    ] = None,
    sender_name: Annotated[
        str | None,
        typer.Option(
            "--sender-name", help="Who it is from (up to 50 characters; default the stream's name)."
        ),
    ] = None,
    sender_icon: Annotated[
        str | None,
        typer.Option(
            "--sender-icon",
            metavar="URL",
            help="An http(s) URL of a PNG or JPEG (at most 5 MB; default the stream's icon).",
        ),
    ] = None,
    json_output: output.JsonOption = False,
) -> None:
    """Send a notification now to every active device of every subscriber of a stream.

    Example: pushctl streams send --account alice str_01JD0000000000000000000000 --title "v2 is out"
    """
    # The same JSON body the HTTP API takes, so both front doors validate alike.
    request: dict[str, Any] = {"title": title}
    optional = {
        "body": body,
        "sound": None if sound is None else sound.value,
        "priority": None if priority is None else priority.value,
        "senderName": sender_name,
        "senderIcon": sender_icon,
    }
    request.update({k: v for k, v in optional.items() if v is not None})
    services = acting_as(ctx, account)
    result = services.streams.send(account, stream_id, structure_request(StreamSend, request))
    notification = result.notification
    if json_output:
        output.print_json(send_result_json(result))
    else:
        output.print_record(
            [
                ("notification id", notification.id),
                ("status", notification.status.value),
                ("sent", str(result.sent)),
                ("subscribers", str(result.subscribers)),
                ("stream", f"{result.stream.name} ({result.stream.code})"),
            ]
        )
    if result.sent:
        output.say(
            f"Queued notification {notification.id} for {_plural(result.sent, 'device')}"
            f" of {_plural(result.subscribers, 'subscriber')}."
        )
    elif result.subscribers == 0:
        output.warn(
            f"notification {notification.id} reached nobody: the stream has no subscribers yet"
            f" (they subscribe with: pushctl streams subscribe {result.stream.code}"
            " --account ACCOUNT)."
        )
    else:
        output.warn(
            f"notification {notification.id} reached nobody: none of the"
            f" {_plural(result.subscribers, 'subscriber')} has an active device."
        )


@app.command("subscribe")
def subscribe(
    ctx: typer.Context,
    code: CodeArgument,
    account: AccountOption,
    json_output: output.JsonOption = False,
) -> None:
    """Subscribe the account to another account's stream by its code.

    Example: pushctl streams subscribe --account bob falcon-7k2q
    """
    # The same JSON body the HTTP API takes, so both front doors validate alike.
    request = structure_request(Subscribe, {"code": code})
    services = acting_as(ctx, account)
    subscription, view = services.streams.subscribe(account, request.code)
    if json_output:
        output.print_json(subscription_json(subscription, view))
    else:
        output.print_record(_subscription_record(subscription, view))
    output.say(f"Subscribed to {view.stream.name} ({view.stream.code}) as {subscription.id}.")


@app.command("subscriptions")
def subscriptions(
    ctx: typer.Context, account: AccountOption, json_output: output.JsonOption = False
) -> None:
    """List the streams the account subscribes to, newest subscription first.

    Example: pushctl streams subscriptions --account bob
    """
    services = acting_as(ctx, account)
    found = services.streams.subscriptions(account)
    if json_output:
        output.print_json([subscription_json(s, v) for s, v in found])
        return
    if not found:
        output.say(
            f"No subscriptions. Subscribe with: pushctl streams subscribe CODE --account {account}"
        )
        return
    output.print_table(
        ["id", "stream", "code", "subscribers", "subscribed"],
        (
            [
                s.id,
                v.stream.name,
                v.stream.code,
                str(v.subscribers),
                output.when(s.created_at),
            ]
            for s, v in found
        ),
    )


@app.command("unsubscribe")
def unsubscribe(
    ctx: typer.Context,
    subscription_id: Annotated[
        str,
        typer.Argument(metavar="SUBSCRIPTION_ID", help="The subscription's id (sub_...)."),
    ],
    account: AccountOption,
    json_output: output.JsonOption = False,
) -> None:
    """Remove one of the account's subscriptions: its stream's sends stop reaching it.

    Example: pushctl streams unsubscribe --account bob sub_01JD0000000000000000000000
    """
    services = acting_as(ctx, account)
    services.streams.unsubscribe(account, subscription_id)
    if json_output:
        output.print_json({"success": True, "id": subscription_id})
    output.say(f"Removed subscription {subscription_id}.")


@app.command("lookup")
def lookup(
    ctx: typer.Context,
    code: CodeArgument,
    account: AccountOption,
    json_output: output.JsonOption = False,
) -> None:
    """Show the stream with a code, and whether the account subscribes to it.

    Example: pushctl streams lookup --account bob falcon-7k2q
    """
    services = acting_as(ctx, account)
    found = services.streams.lookup(account, code)
    if json_output:
        output.print_json(lookup_json(found))
        return
    record = [field for field in _record(found.stream) if field[0] != "created"]
    output.print_record([*record, ("subscribed", output.yes_no(found.is_subscribed))])
