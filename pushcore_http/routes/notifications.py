"""/api/notifications: schedule, list, inspect, edit, cancel and count (API keys with scopes)."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from pushcore import converter as views
from pushcore.converter import (
    NOTIFICATION_CURSOR,
    parse_list_query,
    request_json,
    structure_batch,
    structure_request,
)
from pushcore.domain import errors as e
from pushcore.domain.collapse import replacement_request
from pushcore.domain.inputs import NewNotification
from pushcore.domain.model import Notification
from pushcore.domain.revisions import TIMING_FIELDS, if_match_revision, merge_patch
from pushcore.domain.scheduling import MAX_BATCH
from pushcore.domain.scopes import Scope
from pushcore.domain.states import NotificationStatus
from pushcore.domain.timefmt import format_timestamp
from pushcore.services.replacements import replacement_key
from pushcore_http.answers import answer, query, ref, refusal, shared
from pushcore_http.auth import key, served
from pushcore_http.body import MAX_BATCH_BODY_BYTES, read_json, read_message
from pushcore_http.endpoints import Endpoints
from pushcore_http.rendering import JSONResponse
from pushcore_http.routes import view_response

_READ, _WRITE = key(Scope.NOTIFICATIONS_READ), key(Scope.NOTIFICATIONS_WRITE)
_DETAIL = views.json_schema(views.NotificationView)
_DETAIL |= {"description": "A notification with its delivery counts."}
# The view, with `deliveries` always there (a list's items leave it out).
routes = Endpoints(
    "Notifications",
    {"NotificationDetail": _DETAIL | {"required": [*_DETAIL["required"], "deliveries"]}},
)
_PAGE = [
    query(
        "status",
        "Only notifications in this status.",
        {"type": "string", "enum": [s.value for s in NotificationStatus]},
    ),
    query("collapseKey", "Only notifications with this collapse key.", {"type": "string"}),
    query("streamId", "Only sends to this stream of yours.", {"type": "string"}),
    query("scheduleId", "Only occurrences of this schedule.", {"type": "string"}),
    query("limit", "Page size.", {"type": "integer", "minimum": 1, "maximum": 100, "default": 20}),
    query(
        "cursor", "The `nextCursor` of the previous page, unchanged.", NOTIFICATION_CURSOR.schema()
    ),
]


@routes.post(
    "/api/notifications",
    "Schedule a notification",
    _WRITE,
    answer(201, "Scheduled.", views.NotificationCreatedView)
    | refusal(e.DeviceNotFound("No device with this targetDeviceToken on this account")),
    "Answered once the notification and one delivery per active target device are "
    "committed. The response always reports QUEUED.",
    body=NewNotification,
    text_body=True,
)
async def create(request: Request) -> Response:
    """Schedule; 201 only once the notification and its deliveries are committed."""
    services, caller = served(request)
    new = structure_request(NewNotification, await read_message(request))
    # On the event loop, no thread of the pool: the service checks the icon
    # and awaits the group writer's commit.
    created = await services.notifications.create(caller.account_id, new)
    return JSONResponse(views.notification_created_json(created), 201)


@routes.get(
    "/api/notifications",
    "List notifications",
    _READ,
    answer(200, "One page.", views.NotificationPageView)
    | refusal(
        e.ValidationError([e.FieldError("cursor", "is not a valid cursor")]),
        "An unknown status, a bad limit or a malformed cursor.",
    ),
    "Newest first, a page at a time.",
    parameters=_PAGE,
)
async def list_page(request: Request) -> Response:
    """A page, newest first: ``?status=&limit=&cursor=``."""
    services, caller = served(request)
    query = request.query_params
    status, limit = parse_list_query(query.get("status"), query.get("limit"))
    cursor = query.get("cursor")
    before = NOTIFICATION_CURSOR.decode(cursor) if cursor else None
    page = await run_in_threadpool(
        services.notifications.list,
        caller.account_id,
        status,
        limit,
        before,
        query.get("collapseKey"),
        query.get("streamId"),
        query.get("scheduleId"),
    )
    return view_response(views.NotificationPageView.of(page))


@routes.post(
    "/api/notifications/batch",
    "Schedule many notifications",
    _WRITE,
    answer(201, "Every item scheduled.", views.BatchCreatedView)
    | refusal(
        e.PayloadTooLarge(f"Request body must be at most {MAX_BATCH_BODY_BYTES} bytes"),
        "The body is over 1 MiB.",
    ),
    f"1 to {MAX_BATCH} notifications in one transaction, all or nothing: one invalid "
    "item is a 400 whose `details` name every invalid field of every item "
    "(`notifications[3].title`), and nothing is stored. An unknown `targetDeviceToken` "
    "is such a 400 detail too (not the 404 of a single create), so that one answer "
    "lists everything to fix. The body may be up to 1 MiB.",
    body=views.NewNotificationBatch,
)
async def create_batch(request: Request) -> Response:
    """Schedule 1 to 500 at once, all or nothing; 201 with each creation response."""
    services, caller = served(request)
    batch = structure_batch(await read_json(request, MAX_BATCH_BODY_BYTES))
    created = await services.notifications.create_many(caller.account_id, batch)
    return JSONResponse(views.BatchCreatedView.json_of(created), 201)


@routes.get(
    "/api/notifications/stats",
    "Notification statistics",
    _READ,
    answer(200, "Counts of the account.", views.StatsView),
)
async def stats(request: Request) -> Response:
    """Counts by status and delivery, and the last 24 hours."""
    services, caller = served(request)
    found = await run_in_threadpool(services.notifications.stats, caller.account_id)
    return view_response(views.StatsView.of(found))


@routes.get(
    "/api/notifications/{notification_id}",
    "Get a notification",
    _READ,
    answer(200, "The full record with delivery counts.", ref("NotificationDetail")),
)
async def get(request: Request) -> Response:
    """The full record with delivery counts."""
    services, caller = served(request)
    detail = await run_in_threadpool(
        services.notifications.get, caller.account_id, request.path_params["notification_id"]
    )
    return view_response(views.NotificationView.of(detail.notification, detail.deliveries))


@routes.delete(
    "/api/notifications/{notification_id}",
    "Cancel a notification",
    _WRITE,
    answer(200, "The notification, now CANCELLED.", ref("NotificationDetail"))
    | refusal(
        e.NotCancellable("Notification is already being delivered and can no longer be cancelled")
    ),
    "Allowed from QUEUED and SCHEDULED while no delivery has been handed to a gateway.",
)
async def cancel(request: Request) -> Response:
    """Cancel: 200 with the notification, 409 once it is being delivered or settled."""
    services, caller = served(request)
    notification_id = request.path_params["notification_id"]
    await run_in_threadpool(services.notifications.cancel, caller.account_id, notification_id)
    detail = await run_in_threadpool(services.notifications.get, caller.account_id, notification_id)
    return view_response(views.NotificationView.of(detail.notification, detail.deliveries))


_IF_MATCH = {
    "name": "If-Match",
    "in": "header",
    "schema": {"type": "string", "examples": ["3", '"3"']},
    "description": "Apply only to this revision (bare or quoted); another is a 412.",
}


@routes.declare(
    "PATCH",
    "/api/notifications/{notification_id}",
    "Edit a notification",
    _WRITE,
    answer(200, "The notification, `revision` + 1.", ref("NotificationDetail"))
    | refusal(e.NotEditable("Notification is being delivered; use POST .../replace"))
    | refusal(e.RevisionMismatch("Notification is at revision 2, not 1"))
    # The patch is a body as a create's is: not JSON, too large or of another type.
    | shared("400", "413", "415"),
    "A JSON merge patch (`application/json` or `application/merge-patch+json`) of "
    "`title, body, iconStyle, sound, priority, metadata` (replaced whole), `senderName, "
    "senderIcon, targetDeviceToken` and one timing (`scheduledAt`, or `delay` with "
    "`customDelay`, or `deliverAt`); `null` clears an optional field. Allowed while no "
    "delivery has been handed to a gateway, else 409 `not_editable`; a PATCH and the "
    "engine's claim are ordered, so every device gets one revision, once.",
    parameters=[_IF_MATCH],
)
async def edit(request: Request) -> Response:
    """Edit before sending: 200 with `revision` + 1, 409 once handed, 412 on `If-Match`."""
    services, caller = served(request)
    notification_id = request.path_params["notification_id"]
    if_revision = if_match_revision(request.headers.get("if-match"))
    patch = await read_json(request)
    merge_patch({}, patch)  # the patch's own faults, before any lock is taken

    def apply(found: Notification) -> NewNotification:
        return structure_request(NewNotification, merge_patch(request_json(found), patch))

    icon = patch.get("senderIcon")
    detail = await services.notifications.edit(
        caller.account_id,
        notification_id,
        if_revision,
        apply,
        icon if isinstance(icon, str) else None,
    )
    return view_response(views.NotificationView.of(detail.notification, detail.deliveries))


@routes.post(
    "/api/notifications/{notification_id}/replace",
    "Replace a notification",
    _WRITE,
    answer(201, "The replacement; `supersedes` names the original.", ref("NotificationDetail"))
    | shared("400", "413", "415"),
    "The create fields, all optional: omitted ones are the original's, no timing means "
    "now. A new notification to the original's audience (its target, or the stream's "
    "subscribers at the original send) with the original's `collapseKey` (or, where it "
    "had none, the original's id): the original is superseded if no gateway has taken "
    "it, else replaced on devices and in inboxes.",
    body=NewNotification,
)
async def replace(request: Request) -> Response:
    """201 with the replacement, which carries the original's key and `supersedes`."""
    services, caller = served(request)
    replacements = services.replacements
    given = await read_json(request) if await request.body() else {}
    original = await run_in_threadpool(
        replacements.original, caller.account_id, request.path_params["notification_id"]
    )
    if original.stream is not None and isinstance(given, dict):
        timed = sorted(TIMING_FIELDS & given.keys())
        if timed:
            raise e.ValidationError(
                [e.FieldError(name, "a stream send goes out at once") for name in timed]
            )
    merged = replacement_request(
        request_json(original),
        given,
        replacement_key(original),
        format_timestamp(original.created_at),
    )
    new = structure_request(NewNotification, merged)
    created = await replacements.replace(caller.account_id, original, new)
    detail = await run_in_threadpool(services.notifications.get, caller.account_id, created.id)
    return view_response(views.NotificationView.of(detail.notification, detail.deliveries), 201)


@routes.post(
    "/api/notifications/{notification_id}/withdraw",
    "Withdraw a notification",
    _WRITE,
    answer(200, "The notification, with `withdrawnAt`.", ref("NotificationDetail")) | shared("400"),
    "No body. Takes it back from every inbox and open live channel (`event: withdrawn`) "
    "and sends a withdrawal to each device it reached (APNs a background push, FCM data "
    "`type: withdrawn`, Web Push and webhook devices `{event: withdrawn, notificationId, "
    "collapseKey}`). Not yet taken by a gateway: cancelled (CANCELLED). Again: the same "
    "answer, nothing sent again.",
)
async def withdraw(request: Request) -> Response:
    """Withdraw: 200 with `withdrawnAt`; again, the same 200 and nothing sent again."""
    services, caller = served(request)
    notification_id = request.path_params["notification_id"]
    await run_in_threadpool(services.withdrawals.withdraw, caller.account_id, notification_id)
    detail = await run_in_threadpool(services.notifications.get, caller.account_id, notification_id)
    return view_response(views.NotificationView.of(detail.notification, detail.deliveries))
