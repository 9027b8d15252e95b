"""pushctl streams: channels with a shareable code, sends to their subscribers, subscriptions."""

from __future__ import annotations

from typing import Annotated, Any

import attrs
import typer

from pushcore.converter import StreamDetailView, StreamSummaryView, SubscriptionView, to_json
from pushcore.domain import validation as v
from pushcore.domain.errors import NotFound
from pushcore.domain.inputs import NewStream, StreamSend
from pushcore_cli import output
from pushcore_cli.commands import AccountOption, Api, api_for
from pushcore_cli.errors import naming_options
from pushcore_cli.expiry import TTL_FIELDS, TtlOption, ttl_seconds
from pushcore_cli.fields import field_options, flags

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


NAME = attrs.fields(NewStream).name


def _record(s: StreamSummaryView) -> list[tuple[str, str | None]]:
    return [
        ("id", s.id),
        ("name", s.name),
        ("code", s.code),
        ("description", s.description or None),
        ("icon url", s.icon_url),
        ("subscribers", str(s.subscribers)),
    ]


def _detail_record(s: StreamDetailView) -> list[tuple[str, str | None]]:
    return [*_record(s), ("created", output.when(s.created_at))]


def _subscription_record(subscription: SubscriptionView) -> list[tuple[str, str | None]]:
    s = subscription.stream
    return [
        ("id", subscription.id),
        ("stream", s.name),
        ("code", s.code),
        ("stream id", s.id),
        ("description", s.description or None),
        ("subscribers", str(s.subscribers)),
        ("subscribed", output.when(subscription.created_at)),
    ]


@app.command("create")
@field_options(NewStream, {"name": "name"})
def create(
    ctx: typer.Context,
    name: Annotated[str, typer.Option("--name", help=v.short_help(NAME.metadata))],
    account: AccountOption = None,
    json_output: output.JsonOption = False,
    **fields: Any,
) -> None:
    """Create a stream and print its shareable code (the free plan allows 3 streams).

    Example: pushctl streams create --account alice --name Deploys --description "main deploys"
    """
    with naming_options(OPTIONS):
        stream = api_for(ctx, account).client.streams.create(name, **fields)
    output.show(stream, json_output, _detail_record(stream))
    output.say(
        f"Created stream {stream.id} with code {stream.code}; others subscribe with:"
        f" pushctl streams subscribe {stream.code} --account ACCOUNT"
    )


@app.command("list")
def list_streams(
    ctx: typer.Context,
    account: AccountOption = None,
    json_output: output.JsonOption = False,
) -> None:
    """List the account's streams, newest first, with their subscriber counts.

    Example: pushctl streams list --account alice
    """
    api = api_for(ctx, account)
    streams = api.client.streams.list()
    if json_output:
        output.print_json([to_json(s) for s in streams])
        return
    if not streams:
        output.say(f"No streams. Create one with: pushctl streams create{api.as_account} ...")
        return
    output.print_table(
        ["id", "name", "code", "subscribers", "description", "created"],
        (
            [
                s.id,
                s.name,
                s.code,
                str(s.subscribers),
                s.description or None,
                output.when(s.created_at),
            ]
            for s in streams
        ),
    )


@app.command("delete")
def delete(
    ctx: typer.Context,
    stream_id: StreamIdArgument,
    account: AccountOption = None,
    json_output: output.JsonOption = False,
) -> None:
    """Delete a stream and every subscription to it; notifications sent keep their history.

    Example: pushctl streams delete --account alice str_01JD0000000000000000000000
    """
    deleted = api_for(ctx, account).client.streams.delete(stream_id)
    output.show(deleted, json_output)
    output.say(f"Deleted stream {stream_id} and its subscriptions.")


def _own_stream_id(api: Api, stream: str) -> str:
    """The id of the caller's stream named by its id (``str_...``) or its code."""
    if stream.startswith("str_"):
        return stream
    for own in api.client.streams.list():
        if own.code == stream.lower():
            return own.id
    raise NotFound(f"None of your streams has the code {stream!r} (pushctl streams list)")


def _one_title(title: str | None, title_option: str | None) -> str:
    if title is not None and title_option is not None and title != title_option:
        raise typer.BadParameter(
            "the title is given twice with different values; give it once", param_hint="'--title'"
        )
    chosen = title if title is not None else title_option
    if chosen is None:
        raise typer.BadParameter("missing: the title (as TITLE, or --title)", param_hint="'TITLE'")
    return chosen


@app.command("send")
@field_options(StreamSend, {"title": "title_option", **TTL_FIELDS})
def send(
    ctx: typer.Context,
    stream: Annotated[
        str,
        typer.Argument(
            metavar="STREAM", help="Your stream's id (str_...) or its code (falcon-7k2q)."
        ),
    ],
    title: Annotated[
        str | None,
        typer.Argument(
            metavar="TITLE", help="The title (1 to 200 characters).", show_default=False
        ),
    ] = None,
    title_option: Annotated[
        str | None, typer.Option("--title", help="The title, as an option (the same as TITLE).")
    ] = None,
    ttl: TtlOption = None,
    account: AccountOption = None,
    json_output: output.JsonOption = False,
    **fields: Any,
) -> None:
    """Send a notification now to every active device of every subscriber of a stream.

    Example: pushctl streams send --account alice falcon-7k2q "v2 is out"
    """
    chosen_title = _one_title(title, title_option)
    with naming_options(OPTIONS):
        api = api_for(ctx, account)
        result = api.client.streams.send(
            _own_stream_id(api, stream),
            chosen_title,
            ttl=ttl_seconds(ttl),
            **fields,
        )
    notification_id = result.notification_id
    output.show(
        result,
        json_output,
        [
            ("notification id", notification_id),
            ("sent", str(result.sent)),
            ("subscribers", str(result.subscribers)),
            ("stream", f"{result.stream.name} ({result.stream.code})"),
        ],
    )
    api.warn_without_engine()
    if result.sent:
        output.say(
            f"Queued notification {notification_id} for {_plural(result.sent, 'device')}"
            f" of {_plural(result.subscribers, 'subscriber')}."
        )
    elif result.subscribers == 0:
        output.warn(
            f"notification {notification_id} reached nobody: the stream has no subscribers yet"
            f" (they subscribe with: pushctl streams subscribe {result.stream.code}"
            " --account ACCOUNT)."
        )
    else:
        output.warn(
            f"notification {notification_id} reached nobody: none of the"
            f" {_plural(result.subscribers, 'subscriber')} has an active device."
        )


# The request fields of these commands, by the option that sets them.
OPTIONS = {**flags(create), **flags(send), "code": "CODE"}


@app.command("subscribe")
def subscribe(
    ctx: typer.Context,
    code: CodeArgument,
    account: AccountOption = None,
    json_output: output.JsonOption = False,
) -> None:
    """Subscribe the account to another account's stream by its code.

    Example: pushctl streams subscribe --account bob falcon-7k2q
    """
    with naming_options(OPTIONS):
        subscription = api_for(ctx, account).client.streams.subscribe(code)
    stream = subscription.stream
    output.show(subscription, json_output, _subscription_record(subscription))
    output.say(f"Subscribed to {stream.name} ({stream.code}) as {subscription.id}.")


@app.command("subscriptions")
def subscriptions(
    ctx: typer.Context,
    account: AccountOption = None,
    json_output: output.JsonOption = False,
) -> None:
    """List the streams the account subscribes to, newest subscription first.

    Example: pushctl streams subscriptions --account bob
    """
    api = api_for(ctx, account)
    found = api.client.streams.subscriptions()
    if json_output:
        output.print_json([to_json(s) for s in found])
        return
    if not found:
        output.say(
            f"No subscriptions. Subscribe with: pushctl streams subscribe CODE{api.as_account}"
        )
        return
    output.print_table(
        ["id", "stream", "code", "subscribers", "subscribed"],
        (
            [
                s.id,
                s.stream.name,
                s.stream.code,
                str(s.stream.subscribers),
                output.when(s.created_at),
            ]
            for s in found
        ),
    )


@app.command("unsubscribe")
def unsubscribe(
    ctx: typer.Context,
    subscription_id: Annotated[
        str,
        typer.Argument(metavar="SUBSCRIPTION_ID", help="The subscription's id (sub_...)."),
    ],
    account: AccountOption = None,
    json_output: output.JsonOption = False,
) -> None:
    """Remove one of the account's subscriptions: its stream's sends stop reaching it.

    Example: pushctl streams unsubscribe --account bob sub_01JD0000000000000000000000
    """
    removed = api_for(ctx, account).client.streams.unsubscribe(subscription_id)
    output.show(removed, json_output)
    output.say(f"Removed subscription {subscription_id}.")


@app.command("lookup")
def lookup(
    ctx: typer.Context,
    code: CodeArgument,
    account: AccountOption = None,
    json_output: output.JsonOption = False,
) -> None:
    """Show the stream with a code, and whether the account subscribes to it.

    Example: pushctl streams lookup --account bob falcon-7k2q
    """
    with naming_options(OPTIONS):
        found = api_for(ctx, account).client.streams.lookup(code)
    output.show(
        found, json_output, [*_record(found), ("subscribed", output.yes_no(found.is_subscribed))]
    )
