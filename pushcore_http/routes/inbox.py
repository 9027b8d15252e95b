"""/api/inbox: a page of the inbox, marking entries read, dismissing one (a JWT, or an
API key with notifications:read to look, notifications:write to change)."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from pushcore.converter import DeletedView, InboxPageView, UnreadView, structure_request
from pushcore.domain.errors import FieldError, ValidationError
from pushcore.domain.inputs import ENTRY_ID_PATTERN, InboxRead
from pushcore.domain.scopes import Scope
from pushcore_http.answers import answer, query, refusal, removal
from pushcore_http.auth import either, served
from pushcore_http.body import read_json
from pushcore_http.endpoints import Endpoints
from pushcore_http.routes import gzipped, view_response

routes = Endpoints("Inbox")
READ, _WRITE = either(Scope.NOTIFICATIONS_READ), either(Scope.NOTIFICATIONS_WRITE)
ENTRY_ID = {"type": "string", "pattern": ENTRY_ID_PATTERN}
MALFORMED = refusal(
    ValidationError([FieldError("cursor", "must be an inbox entry id (inb_...)")]),
    "A malformed limit, cursor or entry id.",
)
_PAGE = [
    query("limit", "Page size.", {"type": "integer", "minimum": 1, "maximum": 100, "default": 20}),
    query("cursor", "The `nextCursor` of the previous page.", ENTRY_ID),
    query("unread", "Only unread entries.", {"type": "boolean", "default": False}),
]


def _flag(value: str | None, name: str) -> bool:
    if value is None or value == "false":
        return False
    if value == "true":
        return True
    raise ValidationError([FieldError(name, "must be true or false")])


def _limit(value: str | None) -> int:
    if value is None:
        return 20
    # ASCII digits, and few: int() takes other Unicode digits, and long ones slowly.
    if not (value.isascii() and value.isdigit() and len(value) <= 3 and 1 <= int(value) <= 100):
        raise ValidationError([FieldError("limit", "must be an integer from 1 to 100")])
    return int(value)


@routes.get(
    "/api/inbox",
    "List the inbox",
    READ,
    answer(200, "One page, and the unread count.", InboxPageView) | MALFORMED,
    "Newest first. An entry per notification that reached the account (its own when "
    "due, a stream send's when sent to a stream it subscribes to).",
    parameters=_PAGE,
)
async def page(request: Request) -> Response:
    """A page, newest first, and the unread count: ``?limit=&cursor=&unread=true``."""
    services, caller = served(request)
    query = request.query_params
    limit, unread = _limit(query.get("limit")), _flag(query.get("unread"), "unread")
    found = await run_in_threadpool(
        services.inbox.page, caller.account_id, limit, query.get("cursor") or None, unread
    )
    return gzipped(request, view_response(InboxPageView.of(found)))


@routes.post(
    "/api/inbox/read",
    "Mark entries read",
    _WRITE,
    answer(200, "The unread count after.", UnreadView),
    "By `ids`, or `upTo` (that entry and every older one). Ids of no entry of "
    "the account are passed over.",
    body=InboxRead,
)
async def read(request: Request) -> Response:
    """Mark entries read, by ``ids`` or ``upTo``; the unread count after."""
    services, caller = served(request)
    new = structure_request(InboxRead, await read_json(request))
    unread = await run_in_threadpool(services.inbox.read, caller.account_id, new)
    return view_response(UnreadView(unread))


@routes.delete("/api/inbox/{entry_id}", "Dismiss an entry", _WRITE, removal("entry"))
async def dismiss(request: Request) -> Response:
    """Dismiss an entry; another account's is a 404."""
    services, caller = served(request)
    entry_id = request.path_params["entry_id"]
    await run_in_threadpool(services.inbox.dismiss, caller.account_id, entry_id)
    return view_response(DeletedView.of(entry_id))
