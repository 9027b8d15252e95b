"""/api/streams: channels with a shareable code (creator side) and subscriptions (user side)."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from pushcore import converter as views
from pushcore.converter import structure_request
from pushcore.converter.recipient import MutedSubscriptionView, SubscriptionMute
from pushcore.domain import errors as e
from pushcore.domain.inputs import NewStream, StreamSend, Subscribe
from pushcore.domain.scopes import Scope
from pushcore_http import address_limits
from pushcore_http.answers import answer, listing, ref, refusal, removal, shared
from pushcore_http.auth import USER, USER_OR_NONE, caller_or_none, either, key, served
from pushcore_http.body import read_json, read_message
from pushcore_http.endpoints import Endpoints
from pushcore_http.routes import services_of, view_response

routes = Endpoints("Streams")


@routes.post(
    "/api/streams",
    "Create a stream",
    key(Scope.NOTIFICATIONS_WRITE),
    answer(201, "The stream, with its code to share.", views.StreamDetailView)
    | refusal(
        e.PlanLimit("The free plan allows 3 streams; delete one or move to the pro plan"),
        "The free plan's 3 streams are taken.",
    ),
    body=NewStream,
)
async def create(request: Request) -> Response:
    """Create (API key with notifications:write)."""
    services, caller = served(request)
    new = structure_request(NewStream, await read_json(request))
    # The service checks the icon on the event loop and inserts in a thread.
    view = await services.streams.create(caller.account_id, new)
    return view_response(views.StreamDetailView.of(view), 201)


@routes.get(
    "/api/streams",
    "List your streams",
    either(Scope.NOTIFICATIONS_READ),
    listing("streams", views.StreamDetailView),
    "Newest first.",
)
async def list_streams(request: Request) -> Response:
    """The caller's streams (a JWT, or a key with notifications:read)."""
    services, caller = served(request)
    found = await run_in_threadpool(services.streams.list, caller.account_id)
    return view_response([views.StreamDetailView.of(v) for v in found])


@routes.delete(
    "/api/streams/{stream_id}",
    "Delete a stream",
    either(Scope.NOTIFICATIONS_WRITE),
    removal("stream"),
    "Its subscriptions go too; its code is never given out again.",
)
async def delete(request: Request) -> Response:
    """Delete (a JWT, or a key with notifications:write)."""
    services, caller = served(request)
    stream_id = request.path_params["stream_id"]
    await run_in_threadpool(services.streams.delete, caller.account_id, stream_id)
    return view_response(views.DeletedView.of(stream_id))


@routes.post(
    "/api/streams/{stream_id}/send",
    "Send to every subscriber",
    key(Scope.NOTIFICATIONS_WRITE),
    answer(201, "Enqueued.", views.SendResultView),
    "Immediate. The send is a notification of the stream's creator, listed with a "
    "`stream` field; with no subscriber device it is FAILED (`no_devices`) at once.",
    body=StreamSend,
    text_body=True,
)
async def send(request: Request) -> Response:
    """Send to every subscriber now (API key with notifications:write)."""
    services, caller = served(request)
    given = structure_request(StreamSend, await read_message(request))
    stream_id = request.path_params["stream_id"]
    result = await services.streams.send(caller.account_id, stream_id, given)
    return view_response(views.SendResultView.of(result), 201)


@routes.post(
    "/api/streams/subscribe",
    "Subscribe by code",
    USER,
    answer(201, "Subscribed.", views.SubscriptionView)
    | refusal(e.OwnStream("You cannot subscribe to your own stream"))
    | refusal(e.NotFound("No stream has this code"), "No stream has this code.")
    | refusal(e.AlreadySubscribed("You already subscribe to this stream")),
    body=Subscribe,
)
async def subscribe(request: Request) -> Response:
    """Subscribe by code."""
    services, user = served(request)
    body = structure_request(Subscribe, await read_json(request))
    subscription, view = await run_in_threadpool(
        services.streams.subscribe, user.account_id, body.code
    )
    return view_response(views.SubscriptionView.of(subscription, view), 201)


@routes.get(
    "/api/streams/subscriptions",
    "List your subscriptions",
    USER,
    listing("subscriptions", views.SubscriptionView),
    "Newest first.",
)
async def subscriptions(request: Request) -> Response:
    """The caller's subscriptions."""
    services, user = served(request)
    found = await run_in_threadpool(services.streams.subscriptions, user.account_id)
    return view_response([views.SubscriptionView.of(s, v) for s, v in found])


@routes.delete(
    "/api/streams/subscriptions/{subscription_id}",
    "Unsubscribe",
    USER,
    removal("subscription"),
)
async def unsubscribe(request: Request) -> Response:
    """Unsubscribe."""
    services, user = served(request)
    subscription_id = request.path_params["subscription_id"]
    await run_in_threadpool(services.streams.unsubscribe, user.account_id, subscription_id)
    return view_response(views.DeletedView.of(subscription_id))


@routes.declare(
    "PATCH",
    "/api/streams/subscriptions/{subscription_id}",
    "Mute a stream you follow",
    USER,
    answer(200, "The subscription, with its mute.", MutedSubscriptionView)
    | refusal(e.NotFound("Subscription not found"))
    | shared("400", "413", "415"),
    "`mutedUntil` (a timestamp, or null to unmute): until then the stream's sends reach "
    "your inbox but no device (those deliveries end CANCELLED, `muted`). `allowCritical` "
    "(default true): its critical sends go through the mute and quiet hours; false treats "
    "them as high.",
    body=SubscriptionMute,
)
async def mute(request: Request) -> Response:
    """Mute or unmute one of your subscriptions."""
    services, user = served(request)
    body = structure_request(SubscriptionMute, await read_json(request))
    subscription_id = request.path_params["subscription_id"]
    found, view = await run_in_threadpool(
        services.recipients.mute, user.account_id, subscription_id, body.mute()
    )
    return view_response(MutedSubscriptionView.of(found, view))


@routes.get(
    "/api/streams/lookup/{code}",
    "Look up a stream by code",
    USER_OR_NONE,
    answer(
        200,
        "With a user's token: the stream and whether the caller subscribes. Without a "
        "credential: only its name, code, description and icon (`SharedStream`).",
        {"oneOf": [ref(views.LookupView), ref(views.SharedStreamView)]},
    )
    | refusal(e.NotFound("No stream has this code")),
    "What a share link shows before sign-in needs no credential; those lookups are rate "
    "limited per client address.",
)
async def lookup(request: Request) -> Response:
    """A stream by its code, and whether the caller subscribes (or, without a credential,
    what its share link may show anyone)."""
    services, user = services_of(request), caller_or_none(request)
    code = request.path_params["code"]
    if user is None:
        address_limits.admit(request, "stream_lookup")
        stream = await run_in_threadpool(services.streams.shared, code)
        return view_response(views.SharedStreamView.of(stream))
    found = await run_in_threadpool(services.streams.lookup, user.account_id, code)
    return view_response(views.LookupView.of(found))
