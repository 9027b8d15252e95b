"""A local ``pushctl send`` straight to the notification service, without the HTTP app.

Local commands run on the HTTP app in this process (:mod:`pushcore_cli.inprocess`)
so that local and remote modes cannot differ. Building that app (Starlette,
the routes, their OpenAPI declarations) and the client's httpx cost a local
send more than the send itself (docs/benchmarks.md, "Quick start"), so a send
takes a shorter road, and stays the same command:

- the body is the one the client would send (its own :func:`json_body`,
  encoded as httpx encodes it), read back as the route reads it
  (:func:`structure_request` of :class:`NewNotification`), and given to the
  same service method, with the same account;
- the answer is the route's view, read back from its JSON as the client reads it;
- whatever the app would treat in a way of its own goes the app's way, through
  the client: a body the app reads strictly (past its size limit, a string
  that is not Unicode, a NUL, an integer too long for any field), and every
  refusal (a :class:`PushcoreError`), which nothing stored, so that its words,
  field names and exit code are the app's own.

``tests/cli/test_local_send.py`` compares the two roads.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import TYPE_CHECKING, Any

from pushcore.client._call import json_body
from pushcore.converter import (
    NotificationCreatedView,
    from_json,
    notification_created_json,
    structure_request,
)
from pushcore.domain.errors import PushcoreError
from pushcore.domain.inputs import NewNotification

if TYPE_CHECKING:
    from pushcore_cli.commands import Api

BODY_LIMIT = 64 * 1024
"""The app's limit on a request body (API.md, "Limits"); a longer one goes the app's way."""
# What the app's strict reading refuses or names (a NUL, written \u0000 in JSON, and an
# integer of more than 20 digits); a body with either, or a look-alike, goes the app's way.
_STRICT = re.compile(r"\\u0000|\d{21}")


def create(api: Api, title: str, options: dict[str, Any]) -> NotificationCreatedView:
    """``api.client.notifications.create(title, **options)``, straight to the service when
    local and the body is a plain one; through the client otherwise."""
    if api.local is None or api.account is None:
        return api.client.notifications.create(title, **options)
    body = plain_body(json_body(title=title, **options))
    if body is None:
        return api.client.notifications.create(title, **options)
    try:
        new = structure_request(NewNotification, body)
        created = asyncio.run(api.local.notifications.create(api.account, new))
    except PushcoreError:
        # Refused, so nothing was stored: the app refuses it again, in its own words.
        return api.client.notifications.create(title, **options)
    answer = json.loads(json.dumps(notification_created_json(created)))
    return from_json(answer, NotificationCreatedView)


def plain_body(body: dict[str, Any]) -> dict[str, Any] | None:
    """``body`` as the app would read it from the wire, or None when the app's strict
    reading could differ from a plain one (see the module's docstring)."""
    try:
        text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        size = len(text.encode("utf-8"))
    except (TypeError, ValueError):  # UnicodeEncodeError is a ValueError
        return None
    if size > BODY_LIMIT or _STRICT.search(text):
        return None
    read: dict[str, Any] = json.loads(text)
    return read
