"""/api/notifications: schedule, list, inspect, cancel and count (API keys with scopes)."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.endpoints import HTTPEndpoint
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from pushcore.converter import (
    BatchCreatedView,
    NotificationCreatedView,
    NotificationPageView,
    NotificationView,
    StatsView,
    decode_cursor,
    parse_list_query,
    structure_batch,
    structure_request,
)
from pushcore.domain.inputs import NewNotification
from pushcore.domain.scopes import Scope
from pushcore_http.auth import Accepts, authenticated, served
from pushcore_http.body import MAX_BATCH_BODY_BYTES, read_json, read_message
from pushcore_http.routes import view_response


class Notifications(HTTPEndpoint):
    """/api/notifications"""

    @authenticated(Accepts.KEY, Scope.NOTIFICATIONS_WRITE)
    async def post(self, request: Request) -> Response:
        """Schedule; 201 only once the notification and its deliveries are committed."""
        services, caller = served(request)
        new = structure_request(NewNotification, await read_message(request))
        # On the event loop, no thread of the pool: the service checks the icon
        # and awaits the group writer's commit.
        created = await services.notifications.create(caller.account_id, new)
        return view_response(NotificationCreatedView.of(created), 201)

    @authenticated(Accepts.KEY, Scope.NOTIFICATIONS_READ)
    async def get(self, request: Request) -> Response:
        """A page, newest first: ``?status=&limit=&cursor=``."""
        services, caller = served(request)
        query = request.query_params
        status, limit = parse_list_query(query.get("status"), query.get("limit"))
        cursor = query.get("cursor")
        before = decode_cursor(cursor) if cursor else None
        page = await run_in_threadpool(
            services.notifications.list, caller.account_id, status, limit, before
        )
        return view_response(NotificationPageView.of(page.items, page.next_before))


class Batch(HTTPEndpoint):
    """/api/notifications/batch"""

    @authenticated(Accepts.KEY, Scope.NOTIFICATIONS_WRITE)
    async def post(self, request: Request) -> Response:
        """Schedule 1 to 500 at once, all or nothing; 201 with each creation response."""
        services, caller = served(request)
        batch = structure_batch(await read_json(request, MAX_BATCH_BODY_BYTES))
        created = await services.notifications.create_many(caller.account_id, batch)
        return view_response(BatchCreatedView.of(created), 201)


class Stats(HTTPEndpoint):
    """/api/notifications/stats"""

    @authenticated(Accepts.KEY, Scope.NOTIFICATIONS_READ)
    async def get(self, request: Request) -> Response:
        """Counts by status and delivery, and the last 24 hours."""
        services, caller = served(request)
        stats = await run_in_threadpool(services.notifications.stats, caller.account_id)
        return view_response(StatsView.of(stats))


class Notification(HTTPEndpoint):
    """/api/notifications/:id"""

    @authenticated(Accepts.KEY, Scope.NOTIFICATIONS_READ)
    async def get(self, request: Request) -> Response:
        """The full record with delivery counts."""
        services, caller = served(request)
        detail = await run_in_threadpool(
            services.notifications.get, caller.account_id, request.path_params["notification_id"]
        )
        return view_response(NotificationView.of(detail.notification, detail.deliveries))

    @authenticated(Accepts.KEY, Scope.NOTIFICATIONS_WRITE)
    async def delete(self, request: Request) -> Response:
        """Cancel: 200 with the notification, 409 once it is being delivered or settled."""
        services, caller = served(request)
        notification_id = request.path_params["notification_id"]
        await run_in_threadpool(services.notifications.cancel, caller.account_id, notification_id)
        detail = await run_in_threadpool(
            services.notifications.get, caller.account_id, notification_id
        )
        return view_response(NotificationView.of(detail.notification, detail.deliveries))


routes = [
    Route("/api/notifications", Notifications),
    Route("/api/notifications/batch", Batch),
    Route("/api/notifications/stats", Stats),
    Route("/api/notifications/{notification_id}", Notification),
]
