"""client.schedules: recurring schedules (an API key or a user token)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from pushcore.client._call import Auth, Call, json_body, many, one, path, query
from pushcore.client._resource import Pages, Resource, S_co, endpoint, listing
from pushcore.converter import DeletedView
from pushcore.converter.schedules import OccurrenceView, SchedulePageView, ScheduleView
from pushcore.domain.schedules import ScheduleState

PAGE_SIZE = 100


def create(
    name: str,
    rrule: str,
    template: Mapping[str, Any],
    *,
    start: str | None = None,
    time_zone: str | None = None,
    exdates: Sequence[str] | None = None,
    catch_up: Mapping[str, Any] | None = None,
    stream_id: str | None = None,
) -> Call[ScheduleView]:
    """A new schedule: ``template`` (the fields of a notification, API spelling) by ``rrule``."""
    data = json_body(
        name=name,
        rrule=rrule,
        start=start,
        time_zone=time_zone,
        exdates=None if exdates is None else list(exdates),
        catch_up=catch_up,
        stream_id=stream_id,
    )
    data["template"] = dict(template)
    return Call("POST", "/api/schedules", Auth.EITHER, one(ScheduleView), data)


def get(schedule_id: str) -> Call[ScheduleView]:
    """The schedule."""
    return Call("GET", path("/api/schedules/{}", schedule_id), Auth.EITHER, one(ScheduleView))


def update(
    schedule_id: str, patch: Mapping[str, Any], if_revision: int | None = None
) -> Call[ScheduleView]:
    """A JSON merge patch of the schedule's fields (API spelling); ``if_revision``: If-Match."""
    url = path("/api/schedules/{}", schedule_id)
    headers = None if if_revision is None else {"If-Match": str(if_revision)}
    return Call("PATCH", url, Auth.EITHER, one(ScheduleView), dict(patch), headers=headers)


def delete(schedule_id: str) -> Call[DeletedView]:
    """Delete the schedule; its pending occurrence is cancelled."""
    return Call("DELETE", path("/api/schedules/{}", schedule_id), Auth.EITHER, one(DeletedView))


def _act(schedule_id: str, action: str) -> Call[ScheduleView]:
    url = path("/api/schedules/{}/" + action, schedule_id)
    return Call("POST", url, Auth.EITHER, one(ScheduleView))


def pause(schedule_id: str) -> Call[ScheduleView]:
    """Pause: no new occurrences; one made and not yet handed is cancelled."""
    return _act(schedule_id, "pause")


def resume(schedule_id: str) -> Call[ScheduleView]:
    """Resume from now; what fell in the pause counts as missed."""
    return _act(schedule_id, "resume")


def trigger(schedule_id: str) -> Call[ScheduleView]:
    """One notification now, counted in ``sent``."""
    return _act(schedule_id, "trigger")


def occurrences(
    schedule_id: str, since: datetime | None = None, limit: int = 10
) -> Call[list[OccurrenceView]]:
    """The next ``limit`` (1-100) occurrences at or after ``since`` (default now)."""
    params = query(limit=limit, **{"from": since})
    url = path("/api/schedules/{}/occurrences", schedule_id)
    return Call("GET", url, Auth.EITHER, many(OccurrenceView), params=params)


def page(
    state: ScheduleState | str | None = None, limit: int | None = None, cursor: str | None = None
) -> Call[SchedulePageView]:
    """One page of schedules, newest first."""
    params = query(limit=PAGE_SIZE if limit is None else limit, state=state, cursor=cursor)
    return Call("GET", "/api/schedules", Auth.EITHER, one(SchedulePageView), params=params)


def all_(state: ScheduleState | str | None = None) -> Pages[ScheduleView]:
    """Every schedule (in ``state``, if given), newest first, page after page."""
    return Pages(lambda cursor: page(state, cursor=cursor))


class Schedules(Resource[S_co]):
    """``client.schedules`` (its methods awaitable on AsyncClient)"""

    create = endpoint(create)
    get = endpoint(get)
    update = endpoint(update)
    delete = endpoint(delete)
    pause = endpoint(pause)
    resume = endpoint(resume)
    trigger = endpoint(trigger)
    occurrences = endpoint(occurrences)
    page = endpoint(page)
    list = listing(all_)
