"""client.webhooks (event webhook endpoints) and client.events (the event log)."""

from __future__ import annotations

from collections.abc import Sequence

from pushcore.client._call import Auth, Call, json_body, many, one, path, query
from pushcore.client._resource import Pages, Resource, S_co, endpoint, listing
from pushcore.converter import DeletedView
from pushcore.converter.events import (
    AttemptPageView,
    AttemptView,
    EventIdView,
    EventPageView,
    EventView,
    SecretView,
    WebhookCreatedView,
    WebhookView,
)
from pushcore.domain.events import EVENTS_PAGE_MAX

_ONE = "/api/webhooks/{}"


def create(
    url: str, events: Sequence[str] = ("*",), *, description: str | None = None
) -> Call[WebhookCreatedView]:
    """Create an endpoint for ``events`` (types or prefixes such as ``delivery.*``); the
    result's ``.secret`` is the only time the secret is shown."""
    data = json_body(url=url, events=list(events), description=description)
    return Call("POST", "/api/webhooks", Auth.EITHER, one(WebhookCreatedView), data)


def list_() -> Call[list[WebhookView]]:
    """Every endpoint of the account, oldest first."""
    return Call("GET", "/api/webhooks", Auth.EITHER, many(WebhookView))


def get(webhook_id: str) -> Call[WebhookView]:
    """One endpoint."""
    return Call("GET", path(_ONE, webhook_id), Auth.EITHER, one(WebhookView))


def update(
    webhook_id: str,
    *,
    url: str | None = None,
    events: Sequence[str] | None = None,
    description: str | None = None,
    enabled: bool | None = None,
) -> Call[WebhookView]:
    """Change the fields given (``enabled=True`` enables one the service disabled)."""
    data = json_body(
        url=url,
        events=None if events is None else list(events),
        description=description,
        enabled=enabled,
    )
    return Call("PATCH", path(_ONE, webhook_id), Auth.EITHER, one(WebhookView), data)


def delete(webhook_id: str) -> Call[DeletedView]:
    """Delete an endpoint and its attempts."""
    return Call("DELETE", path(_ONE, webhook_id), Auth.EITHER, one(DeletedView))


def rotate_secret(webhook_id: str) -> Call[SecretView]:
    """A new secret; the old one signs beside it for 24 hours."""
    url = path(_ONE + "/rotate-secret", webhook_id)
    return Call("POST", url, Auth.EITHER, one(SecretView), {})


def test(webhook_id: str) -> Call[EventIdView]:
    """Send the endpoint a ``webhook.test`` event; the result names it."""
    return Call("POST", path(_ONE + "/test", webhook_id), Auth.EITHER, one(EventIdView), {})


def attempts_page(
    webhook_id: str, limit: int | None = None, cursor: str | None = None
) -> Call[AttemptPageView]:
    """One page of the endpoint's attempts, newest first."""
    params = query(limit=EVENTS_PAGE_MAX if limit is None else limit, cursor=cursor)
    url = path(_ONE + "/attempts", webhook_id)
    return Call("GET", url, Auth.EITHER, one(AttemptPageView), params=params)


def attempts(webhook_id: str) -> Pages[AttemptView]:
    """Every attempt of the endpoint, newest first, page after page."""
    return Pages(lambda cursor: attempts_page(webhook_id, cursor=cursor))


class Webhooks(Resource[S_co]):
    """``client.webhooks`` (its methods awaitable on AsyncClient)"""

    create = endpoint(create)
    list = endpoint(list_)
    get = endpoint(get)
    update = endpoint(update)
    delete = endpoint(delete)
    rotate_secret = endpoint(rotate_secret)
    test = endpoint(test)
    attempts = listing(attempts)


def page(
    type: Sequence[str] | str | None = None,
    after: str | None = None,
    limit: int | None = None,
    cursor: str | None = None,
) -> Call[EventPageView]:
    """One page of events, oldest first, after the event id ``after`` (or ``cursor``)."""
    params = query(
        limit=EVENTS_PAGE_MAX if limit is None else limit,
        # An empty type or cursor is none.
        type=(type if isinstance(type, str) else ",".join(type)) if type else None,
        after=cursor or after or None,
    )
    return Call("GET", "/api/events", Auth.EITHER, one(EventPageView), params=params)


def all_(type: Sequence[str] | str | None = None, after: str | None = None) -> Pages[EventView]:
    """Every event (of ``type``) after ``after``, oldest first, page after page."""
    return Pages(lambda cursor: page(type, after, cursor=cursor))


class Events(Resource[S_co]):
    """``client.events`` (its methods awaitable on AsyncClient)"""

    page = endpoint(page)
    list = listing(all_)
