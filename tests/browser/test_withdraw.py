"""A withdrawn notification leaves the screen: the service worker shows each push under a
tag, and a withdrawal push closes what it showed with that tag (real Chromium, the
server's real encryption through the fake push service, as in test_webpush.py)."""

from __future__ import annotations

import time

import httpx
from playwright.sync_api import BrowserContext, Page

from tests.browser.conftest import AppServer, problems
from tests.browser.test_webpush import deliver_push, enable_web_push
from tests.fakes.webpush_server import FakeSubscription, PushMessage, WebPushServer


def next_message(webpush: WebPushServer, subscription: FakeSubscription, count: int) -> PushMessage:
    """The ``count``-th message the push service got for ``subscription``."""
    deadline = time.monotonic() + 10
    while len(webpush.to(subscription)) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not webpush.errors
    return webpush.to(subscription)[count - 1]


def test_a_withdrawal_closes_the_notification_the_worker_showed(
    context: BrowserContext, page: Page, server: AppServer, webpush: WebPushServer
) -> None:
    account = server.person()
    subscription = enable_web_push(context, page, webpush, account)
    publication = server.stream("Status", account)
    publication.send("Build 41 running")
    publication.send("Kept")
    next_message(webpush, subscription, 2)
    # Two sends due at once go out in either order: tell them apart by title.
    by_title = {m.payload["title"]: m for m in webpush.to(subscription)}
    first, kept = by_title["Build 41 running"], by_title["Kept"]
    # One push at a time, each shown before the next, as a push service hands them.
    deliver_push(context, page, server, first.plaintext, lambda s: len(s) == 1)
    shown = deliver_push(context, page, server, kept.plaintext, lambda s: len(s) == 2)
    assert sorted((n["title"], n["tag"]) for n in shown) == [
        ("Build 41 running", first.payload["notificationId"]),
        ("Kept", kept.payload["notificationId"]),
    ]

    withdrawn = httpx.post(
        f"{server.base}/api/notifications/{first.payload['notificationId']}/withdraw",
        headers={"X-API-Key": publication.key},
    )
    assert withdrawn.status_code == 200, withdrawn.text
    withdrawal = next_message(webpush, subscription, 3)
    assert withdrawal.payload == {
        "event": "withdrawn",
        "notificationId": first.payload["notificationId"],
        "collapseKey": None,
    }
    left = deliver_push(context, page, server, withdrawal.plaintext, lambda s: len(s) == 1)
    assert [n["title"] for n in left] == ["Kept"]
    assert not problems(page)
