"""A notification's deliveries (API keys with notifications:read), and receipts (no
credential: the token in a delivery's payload is the proof)."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from pushcore.converter import structure_request
from pushcore.converter.deliveries import (
    DELIVERY_CURSOR,
    DeliveryPageView,
    ReceiptRequest,
    parse_delivery_query,
)
from pushcore.converter.notifications import parse_list_query
from pushcore.domain import errors as e
from pushcore.domain.receipts import PublicStatus
from pushcore.domain.scopes import Scope
from pushcore.services.receipts import UNKNOWN
from pushcore_http import address_limits
from pushcore_http.answers import RETRY_AFTER, answer, query, refusal, shared
from pushcore_http.auth import PUBLIC, key, served
from pushcore_http.body import read_json
from pushcore_http.endpoints import Endpoints
from pushcore_http.rendering import JSONResponse
from pushcore_http.routes import services_of, view_response

routes = Endpoints("Deliveries")
_PAGE = [
    query(
        "status",
        "Only deliveries in this status.",
        {"type": "string", "enum": [s.value for s in PublicStatus]},
    ),
    query("limit", "Page size.", {"type": "integer", "minimum": 1, "maximum": 100, "default": 20}),
    query(
        "cursor",
        "The `nextCursor` of the previous page, unchanged.",
        DELIVERY_CURSOR.schema(),
    ),
]


@routes.get(
    "/api/notifications/{notification_id}/deliveries",
    "List a notification's deliveries",
    key(Scope.NOTIFICATIONS_READ),
    answer(200, "One page, in delivery id order.", DeliveryPageView)
    | refusal(
        e.ValidationError([e.FieldError("cursor", "is not a valid cursor")]),
        "An unknown status, a bad limit or a malformed cursor.",
    )
    | refusal(e.NotFound("Notification not found")),
    "One delivery per target device. For a stream send, deliveries to other accounts' "
    "devices show `deviceId` and `deviceName` as null.",
    parameters=_PAGE,
)
async def deliveries(request: Request) -> Response:
    """A page of the notification's deliveries: ``?status=&limit=&cursor=``."""
    services, caller = served(request)
    given = request.query_params
    status = parse_delivery_query(given.get("status"))
    _, limit = parse_list_query(None, given.get("limit"))
    cursor = given.get("cursor")
    after = DELIVERY_CURSOR.decode(cursor) if cursor else None
    page = await run_in_threadpool(
        services.receipts.deliveries,
        caller.account_id,
        request.path_params["notification_id"],
        status,
        limit,
        after,
    )
    return view_response(DeliveryPageView.of(page))


@routes.post(
    "/api/receipts",
    "Report a receipt",
    PUBLIC,
    answer(202, "Noted (or noted before: the first of each event wins).", {"type": "object"})
    | refusal(e.NotFound(UNKNOWN), "A token this server did not make, or its delivery is gone.")
    | refusal(e.RateLimited("Too many requests from this address", 1), headers=RETRY_AFTER)
    | shared("503"),
    "`displayed` or `opened`, for the delivery whose payload carried `token` "
    "(its `receipt`). No credential: the token is the proof. Neither the client's "
    "address nor its user agent is stored. Rate limited per client address.",
    body=ReceiptRequest,
)
async def receipt(request: Request) -> Response:
    """Note a device's receipt: 202 ``{}``."""
    services = services_of(request)
    address_limits.admit(request, "receipts")
    given = structure_request(ReceiptRequest, await read_json(request))
    await run_in_threadpool(services.receipts.record, given.token, given.event)
    return JSONResponse({}, 202)
