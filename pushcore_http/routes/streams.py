"""/api/streams: channels with a shareable code (creator side) and subscriptions (user side)."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.endpoints import HTTPEndpoint
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from pushcore.converter import (
    DeletedView,
    LookupView,
    SendResultView,
    StreamDetailView,
    SubscriptionView,
    structure_request,
)
from pushcore.domain import inputs
from pushcore.domain.inputs import NewStream, StreamSend
from pushcore.domain.scopes import Scope
from pushcore_http.auth import Accepts, authenticated, caller_of, served
from pushcore_http.body import read_json, read_message
from pushcore_http.routes import services_of, view_response


class Streams(HTTPEndpoint):
    """/api/streams"""

    @authenticated(Accepts.KEY, Scope.NOTIFICATIONS_WRITE)
    async def post(self, request: Request) -> Response:
        """Create (API key with notifications:write)."""
        services, caller = served(request)
        new = structure_request(NewStream, await read_json(request))
        # The service checks the icon on the event loop and inserts in a thread.
        view = await services.streams.create(caller.account_id, new)
        return view_response(StreamDetailView.of(view), 201)

    @authenticated(Accepts.EITHER, Scope.NOTIFICATIONS_READ)
    async def get(self, request: Request) -> Response:
        """The caller's streams (a JWT, or a key with notifications:read)."""
        services, caller = served(request)
        views = await run_in_threadpool(services.streams.list, caller.account_id)
        return view_response([StreamDetailView.of(v) for v in views])


class Stream(HTTPEndpoint):
    """/api/streams/:id"""

    @authenticated(Accepts.EITHER, Scope.NOTIFICATIONS_WRITE)
    async def delete(self, request: Request) -> Response:
        """Delete (a JWT, or a key with notifications:write)."""
        services, caller = served(request)
        stream_id = request.path_params["stream_id"]
        await run_in_threadpool(services.streams.delete, caller.account_id, stream_id)
        return view_response(DeletedView.of(stream_id))


class Send(HTTPEndpoint):
    """/api/streams/:id/send"""

    @authenticated(Accepts.KEY, Scope.NOTIFICATIONS_WRITE)
    async def post(self, request: Request) -> Response:
        """Send to every subscriber now (API key with notifications:write)."""
        services, caller = served(request)
        send = structure_request(StreamSend, await read_message(request))
        stream_id = request.path_params["stream_id"]
        result = await services.streams.send(caller.account_id, stream_id, send)
        return view_response(SendResultView.of(result), 201)


class Subscribe(HTTPEndpoint):
    """/api/streams/subscribe (JWT)"""

    @authenticated(Accepts.USER)
    async def post(self, request: Request) -> Response:
        """Subscribe by code."""
        services = services_of(request)
        user = caller_of(request)
        body = structure_request(inputs.Subscribe, await read_json(request))
        subscription, view = await run_in_threadpool(
            services.streams.subscribe, user.account_id, body.code
        )
        return view_response(SubscriptionView.of(subscription, view), 201)


class Subscriptions(HTTPEndpoint):
    """/api/streams/subscriptions (JWT)"""

    @authenticated(Accepts.USER)
    async def get(self, request: Request) -> Response:
        """The caller's subscriptions."""
        services = services_of(request)
        user = caller_of(request)
        found = await run_in_threadpool(services.streams.subscriptions, user.account_id)
        return view_response([SubscriptionView.of(s, v) for s, v in found])


class Subscription(HTTPEndpoint):
    """/api/streams/subscriptions/:id"""

    @authenticated(Accepts.USER)
    async def delete(self, request: Request) -> Response:
        """Unsubscribe."""
        services = services_of(request)
        user = caller_of(request)
        subscription_id = request.path_params["subscription_id"]
        await run_in_threadpool(services.streams.unsubscribe, user.account_id, subscription_id)
        return view_response(DeletedView.of(subscription_id))


class Lookup(HTTPEndpoint):
    """/api/streams/lookup/:code"""

    @authenticated(Accepts.USER)
    async def get(self, request: Request) -> Response:
        """A stream by its code, and whether the caller subscribes."""
        services = services_of(request)
        user = caller_of(request)
        found = await run_in_threadpool(
            services.streams.lookup, user.account_id, request.path_params["code"]
        )
        return view_response(LookupView.of(found))


# The fixed paths come before /api/streams/{stream_id}, which would take them; they
# match every method (the endpoint answers 405 with its own Allow), since a route
# limited to some methods lets the others fall through to /api/streams/{stream_id}.
routes = [
    Route("/api/streams", Streams),
    Route("/api/streams/subscribe", Subscribe),
    Route("/api/streams/subscriptions", Subscriptions),
    Route("/api/streams/subscriptions/{subscription_id}", Subscription),
    Route("/api/streams/lookup/{code}", Lookup),
    Route("/api/streams/{stream_id}", Stream),
    Route("/api/streams/{stream_id}/send", Send),
]
