"""client.notifications: schedule, inspect, list, cancel and count (an API key)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pushcore.client._call import Auth, Call, json_body, one, patch_body, path, query
from pushcore.client._keywords import keywords
from pushcore.client._resource import Pages, Resource, S_co, endpoint, listing
from pushcore.client.resources.deliveries import deliveries_page, every_delivery
from pushcore.converter import (
    BatchCreatedView,
    NotificationCreatedView,
    NotificationPageView,
    NotificationView,
    StatsView,
    from_json,
)
from pushcore.domain.inputs import NewNotification
from pushcore.domain.states import NotificationStatus

# The largest page the API serves: the fewest requests for a full listing.
PAGE_SIZE = 100


@keywords(NewNotification)
def create(title: str, **fields: Any) -> Call[NotificationCreatedView]:
    """Schedule a notification to the account's devices (or to ``target_device_token``)."""
    data = json_body(title=title, **fields)
    return Call("POST", "/api/notifications", Auth.KEY, one(NotificationCreatedView), data)


def create_many(items: Sequence[Mapping[str, Any]]) -> Call[list[NotificationCreatedView]]:
    """Schedule 1 to 500 notifications at once, all or nothing (the batch endpoint).

    Each item is a dict of :func:`create`'s keyword arguments (``title`` and the
    snake_case options); the result is each item's creation view, in order.
    """
    data = {"notifications": [_item(i, item) for i, item in enumerate(items)]}
    url = "/api/notifications/batch"
    return Call(
        "POST", url, Auth.KEY, lambda answer: list(from_json(answer, BatchCreatedView).items), data
    )


def _item(index: int, item: Mapping[str, Any]) -> dict[str, Any]:
    """One batch item as JSON, by :func:`create`'s rules; TypeError for an unknown name."""
    try:
        return create(**item).json  # type: ignore[no-any-return]
    except TypeError as exc:
        raise TypeError(f"create_many: item {index}: {exc}") from None


def get(notification_id: str) -> Call[NotificationView]:
    """A notification with every field it was created with and its delivery counts."""
    url = path("/api/notifications/{}", notification_id)
    return Call("GET", url, Auth.KEY, one(NotificationView))


def cancel(notification_id: str) -> Call[NotificationView]:
    """Cancel a notification not yet handed to a gateway; the result is CANCELLED."""
    url = path("/api/notifications/{}", notification_id)
    return Call("DELETE", url, Auth.KEY, one(NotificationView))


@keywords(NewNotification)
def update(
    notification_id: str, *, if_revision: int | None = None, **fields: Any
) -> Call[NotificationView]:
    """Edit a notification no gateway has taken yet (PATCH, a JSON merge patch): the
    fields given change, None clears one; ``if_revision`` makes it conditional (412
    ``revision_mismatch`` when the notification is at another revision)."""
    url = path("/api/notifications/{}", notification_id)
    headers = None if if_revision is None else {"If-Match": str(if_revision)}
    data = patch_body(**fields)
    return Call("PATCH", url, Auth.KEY, one(NotificationView), data, headers=headers)


@keywords(NewNotification)
def replace(notification_id: str, **fields: Any) -> Call[NotificationView]:
    """A new notification to the original's audience, with its collapse key (or its id):
    the fields given, the original's for the rest, now unless a timing is given."""
    url = path("/api/notifications/{}/replace", notification_id)
    return Call("POST", url, Auth.KEY, one(NotificationView), json_body(**fields))


def withdraw(notification_id: str) -> Call[NotificationView]:
    """Take a notification back from every inbox and device that got it (cancelled when
    none has yet); again, the same answer and nothing sent again."""
    url = path("/api/notifications/{}/withdraw", notification_id)
    return Call("POST", url, Auth.KEY, one(NotificationView))


def stats() -> Call[StatsView]:
    """The account's counts by status and delivery, and for the last 24 hours."""
    return Call("GET", "/api/notifications/stats", Auth.KEY, one(StatsView))


def page(
    status: NotificationStatus | str | None = None,
    limit: int | None = None,
    cursor: str | None = None,
    collapse_key: str | None = None,
    stream_id: str | None = None,
    schedule_id: str | None = None,
) -> Call[NotificationPageView]:
    """One page of the list, newest first: ``limit`` items (1-100) after ``cursor``
    (only those with ``collapse_key``, sent to ``stream_id`` or made by ``schedule_id``,
    when given)."""
    params = query(
        limit=PAGE_SIZE if limit is None else limit,
        status=status,
        collapse_key=collapse_key,
        stream_id=stream_id,
        schedule_id=schedule_id,
        cursor=cursor,
    )
    return Call("GET", "/api/notifications", Auth.KEY, one(NotificationPageView), params=params)


def all_(status: NotificationStatus | str | None = None) -> Pages[NotificationView]:
    """Every notification (with ``status``, if given), newest first, page after page."""
    return Pages(lambda cursor: page(status, cursor=cursor))


class Notifications(Resource[S_co]):
    """``client.notifications`` (its methods awaitable on AsyncClient)"""

    create = endpoint(create)
    create_many = endpoint(create_many)
    get = endpoint(get)
    cancel = endpoint(cancel)
    update = endpoint(update)
    replace = endpoint(replace)
    withdraw = endpoint(withdraw)
    stats = endpoint(stats)
    page = endpoint(page)
    list = listing(all_)
    deliveries = listing(every_delivery)
    deliveries_page = endpoint(deliveries_page)
