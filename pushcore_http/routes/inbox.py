"""/api/inbox: a page of the inbox, marking entries read, dismissing one (a JWT, or an
API key with notifications:read to look, notifications:write to change)."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.endpoints import HTTPEndpoint
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from pushcore.converter import DeletedView, InboxPageView, UnreadView, structure_request
from pushcore.domain.errors import FieldError, ValidationError
from pushcore.domain.inputs import InboxRead
from pushcore.domain.scopes import Scope
from pushcore_http.auth import Accepts, authenticated, served
from pushcore_http.body import read_json
from pushcore_http.routes import view_response
from pushcore_http.routes.live import Events


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


class Inbox(HTTPEndpoint):
    """/api/inbox"""

    @authenticated(Accepts.EITHER, Scope.NOTIFICATIONS_READ)
    async def get(self, request: Request) -> Response:
        """A page, newest first, and the unread count: ``?limit=&cursor=&unread=true``."""
        services, caller = served(request)
        query = request.query_params
        limit, unread = _limit(query.get("limit")), _flag(query.get("unread"), "unread")
        page = await run_in_threadpool(
            services.inbox.page, caller.account_id, limit, query.get("cursor") or None, unread
        )
        return view_response(InboxPageView.of(page))


class Read(HTTPEndpoint):
    """/api/inbox/read"""

    @authenticated(Accepts.EITHER, Scope.NOTIFICATIONS_WRITE)
    async def post(self, request: Request) -> Response:
        """Mark entries read, by ``ids`` or ``upTo``; the unread count after."""
        services, caller = served(request)
        new = structure_request(InboxRead, await read_json(request))
        unread = await run_in_threadpool(services.inbox.read, caller.account_id, new)
        return view_response(UnreadView(unread))


class Entry(HTTPEndpoint):
    """/api/inbox/:id"""

    @authenticated(Accepts.EITHER, Scope.NOTIFICATIONS_WRITE)
    async def delete(self, request: Request) -> Response:
        """Dismiss an entry; another account's is a 404."""
        services, caller = served(request)
        entry_id = request.path_params["entry_id"]
        await run_in_threadpool(services.inbox.dismiss, caller.account_id, entry_id)
        return view_response(DeletedView.of(entry_id))


routes = [
    Route("/api/inbox", Inbox),
    Route("/api/inbox/read", Read),
    Route("/api/inbox/events", Events),
    Route("/api/inbox/{entry_id}", Entry),
]
