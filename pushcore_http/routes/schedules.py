"""/api/schedules: recurring schedules and the preview of their occurrences."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from pushcore import converter as views
from pushcore.converter import parse_timestamp
from pushcore.converter.schedules import (
    SCHEDULE_CURSOR,
    NewSchedule,
    OccurrenceView,
    SchedulePageView,
    ScheduleView,
)
from pushcore.domain import errors as e
from pushcore.domain.revisions import if_match_revision
from pushcore.domain.schedules import PREVIEW_MAX, ScheduleState, preview_limit
from pushcore.domain.scopes import Scope
from pushcore_http.answers import answer, query, refusal, shared
from pushcore_http.auth import either, served
from pushcore_http.body import read_json
from pushcore_http.endpoints import Endpoints
from pushcore_http.routes import view_response

_READ, _WRITE = either(Scope.NOTIFICATIONS_READ), either(Scope.NOTIFICATIONS_WRITE)
routes = Endpoints("Schedules")
_ONE = "/api/schedules/{schedule_id}"
_ENDED = refusal(e.ScheduleEnded("The schedule has completed; it cannot be paused"))


def _state(value: str | None) -> ScheduleState | None:
    if value is None:
        return None
    try:
        return ScheduleState(value)
    except ValueError:
        raise e.ValidationError(
            [e.FieldError("state", "must be ACTIVE, PAUSED or COMPLETED")]
        ) from None


def _limit(value: str | None) -> int:
    if value is None:
        return 20
    if not value.isdigit() or not 1 <= int(value) <= 100:
        raise e.ValidationError([e.FieldError("limit", "must be a whole number from 1 to 100")])
    return int(value)


@routes.post(
    "/api/schedules",
    "Create a recurring schedule",
    _WRITE,
    answer(201, "Created, ACTIVE.", ScheduleView)
    | refusal(e.PlanLimit("The free plan allows 20 schedules that are not completed"))
    | refusal(e.NotFound("Stream not found"), "The `streamId` names no stream of the account."),
    "A notification (or with `streamId` a stream send) made again and again by an RFC 5545"
    " rule in a time zone. Errors in the template name `template.title` and so on.",
    body=NewSchedule,
)
async def create(request: Request) -> Response:
    """201 with the schedule."""
    services, caller = served(request)
    body = await read_json(request)
    created = await run_in_threadpool(services.schedules.create, caller.account_id, body)
    return view_response(ScheduleView.of(created), 201)


@routes.get(
    "/api/schedules",
    "List schedules",
    _READ,
    answer(200, "One page, newest first.", SchedulePageView) | shared("400"),
    parameters=[
        query(
            "state",
            "Only schedules in this state.",
            {"type": "string", "enum": list(ScheduleState)},
        ),
        query(
            "limit", "Page size.", {"type": "integer", "minimum": 1, "maximum": 100, "default": 20}
        ),
        query(
            "cursor", "The `nextCursor` of the previous page, unchanged.", SCHEDULE_CURSOR.schema()
        ),
    ],
)
async def list_page(request: Request) -> Response:
    """A page: ``?state=&limit=&cursor=``."""
    services, caller = served(request)
    params = request.query_params
    state, limit = _state(params.get("state")), _limit(params.get("limit"))
    cursor = params.get("cursor")
    before = SCHEDULE_CURSOR.decode(cursor) if cursor else None
    page = await run_in_threadpool(services.schedules.list, caller.account_id, state, limit, before)
    return view_response(SchedulePageView.of(page))


@routes.get(_ONE, "Get a schedule", _READ, answer(200, "The schedule.", ScheduleView))
async def get(request: Request) -> Response:
    """The schedule."""
    services, caller = served(request)
    found = await run_in_threadpool(
        services.schedules.get, caller.account_id, request.path_params["schedule_id"]
    )
    return view_response(ScheduleView.of(found))


@routes.declare(
    "PATCH",
    _ONE,
    "Edit a schedule",
    _WRITE,
    answer(200, "The schedule, `revision` + 1.", ScheduleView)
    | refusal(e.RevisionMismatch("Schedule is at revision 2, not 1"))
    | refusal(e.ScheduleEnded("The schedule has completed; it cannot be changed"))
    | shared("400", "413", "415"),
    "A JSON merge patch of the schedule's fields (`application/json` or"
    " `application/merge-patch+json`); `If-Match: <revision>` makes it conditional. A new"
    " timing applies from now; an occurrence already made stays an ordinary notification.",
    parameters=[
        {
            "name": "If-Match",
            "in": "header",
            "schema": {"type": "string", "examples": ["3", '"3"']},
            "description": "Apply only to this revision (bare or quoted); another is a 412.",
        }
    ],
)
async def edit(request: Request) -> Response:
    """200 with ``revision`` + 1; 412 on another revision."""
    services, caller = served(request)
    if_revision = if_match_revision(request.headers.get("if-match"))
    patch = await read_json(request)
    edited = await run_in_threadpool(
        services.schedules.update,
        caller.account_id,
        request.path_params["schedule_id"],
        if_revision,
        patch,
    )
    return view_response(ScheduleView.of(edited))


@routes.delete(
    _ONE,
    "Delete a schedule",
    _WRITE,
    answer(200, "Deleted.", views.DeletedView),
    "Its occurrence made and not yet handed to a gateway is cancelled.",
)
async def delete(request: Request) -> Response:
    """``{success: true, id}``."""
    services, caller = served(request)
    schedule_id = request.path_params["schedule_id"]
    await run_in_threadpool(services.schedules.delete, caller.account_id, schedule_id)
    return view_response(views.DeletedView.of(schedule_id))


def _action(name: str, summary: str, description: str) -> None:
    async def act(request: Request) -> Response:
        services, caller = served(request)
        method = getattr(services.schedules, name)
        done = await run_in_threadpool(
            method, caller.account_id, request.path_params["schedule_id"]
        )
        return view_response(ScheduleView.of(done))

    act.__doc__ = summary
    routes.post(
        f"{_ONE}/{name}",
        summary,
        _WRITE,
        answer(200, "The schedule.", ScheduleView) | _ENDED | shared("400"),
        description,
    )(act)


_action(
    "pause", "Pause a schedule", "No new occurrences; one made and not yet handed is cancelled."
)
_action(
    "resume", "Resume a schedule", "Continues from now: what fell in the pause counts as missed."
)
_action(
    "trigger",
    "Trigger a schedule now",
    "One notification now (`occurrenceAt` its time), counted in `sent`, apart from COUNT.",
)


@routes.get(
    f"{_ONE}/occurrences",
    "Preview a schedule's occurrences",
    _READ,
    answer(200, "The occurrences, in order.", {"type": "array", "items": {"$ref": OccurrenceView}})
    | shared("400"),
    "Each is `{at, localTime, shifted}`; `shifted` when the wall time did not exist that day.",
    parameters=[
        query("from", "A timestamp; default now.", {"type": "string", "format": "date-time"}),
        query(
            "limit",
            "How many.",
            {"type": "integer", "minimum": 1, "maximum": PREVIEW_MAX, "default": 10},
        ),
    ],
)
async def occurrences(request: Request) -> Response:
    """The next ``limit`` occurrences at or after ``from``."""
    services, caller = served(request)
    params = request.query_params
    limit = preview_limit(params.get("limit"))
    since = None
    if params.get("from") is not None:
        try:
            since = parse_timestamp(params["from"])
        except (TypeError, ValueError):
            raise e.ValidationError(
                [e.FieldError("from", "must be a timestamp with an offset (2027-03-28T00:00:00Z)")]
            ) from None
    found = await run_in_threadpool(
        services.schedules.occurrences,
        caller.account_id,
        request.path_params["schedule_id"],
        since,
        limit,
    )
    return view_response([OccurrenceView.of(o) for o in found])
