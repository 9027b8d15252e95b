"""A withdrawn notification leaves the screen: the service worker shows each push under a
tag, and a withdrawal push closes what it showed with that tag (real Chromium, the
server's real encryption through the fake push service, as in test_webpush.py)."""

from __future__ import annotations

import time
from typing import Any

import httpx
from playwright.sync_api import BrowserContext, Page

from tests.browser.conftest import AppServer, problems
from tests.browser.test_webpush import SHOWN, enable_web_push
from tests.fakes.webpush_server import FakeSubscription, PushMessage, WebPushServer


def next_message(webpush: WebPushServer, subscription: FakeSubscription, count: int) -> PushMessage:
    """The ``count``-th message the push service got for ``subscription``."""
    deadline = time.monotonic() + 10
    while len(webpush.to(subscription)) < count and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not webpush.errors
    return webpush.to(subscription)[count - 1]


def worker_registration(context: BrowserContext, page: Page) -> tuple[Any, str]:
    """A DevTools session and the id of the app's service worker registration."""
    cdp = context.new_cdp_session(page)
    registrations: list[dict[str, object]] = []
    cdp.on(
        "ServiceWorker.workerRegistrationUpdated",
        lambda e: registrations.extend(e["registrations"]),
    )
    cdp.send("ServiceWorker.enable")
    deadline = time.monotonic() + 5
    while not registrations and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    [registration] = [r for r in registrations if str(r["scopeURL"]).endswith("/app/")][:1]
    return cdp, str(registration["registrationId"])


def shown_within(page: Page, check: Any, seconds: float = 10) -> Any:
    """The notifications shown, once ``check`` holds for them (or at the deadline)."""
    deadline = time.monotonic() + seconds
    shown = page.evaluate(SHOWN)
    while not check(shown) and time.monotonic() < deadline:
        page.wait_for_timeout(100)
        shown = page.evaluate(SHOWN)
    return shown


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
    cdp, registration = worker_registration(context, page)

    def deliver(message: PushMessage, check: Any) -> Any:
        """Hands ``message`` to the worker as the browser does with a push, again every 2 s
        until ``check`` holds for what is shown: a push handed to DevTools while the worker
        is starting can be dropped (CI showed it three times under load, first two back to
        back, then one alone), and a repeat is harmless, as the worker shows each
        notification under its own tag and a withdrawal only closes."""
        deadline = time.monotonic() + 20
        while True:
            cdp.send(
                "ServiceWorker.deliverPushMessage",
                {
                    "origin": server.base,
                    "registrationId": registration,
                    "data": message.plaintext.decode(),
                },
            )
            shown = shown_within(page, check, seconds=min(2.0, deadline - time.monotonic()))
            if check(shown) or time.monotonic() >= deadline:
                return shown

    # One push at a time, each shown before the next, as a push service hands them.
    deliver(first, lambda s: len(s) == 1)
    shown = deliver(kept, lambda s: len(s) == 2)
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
    left = deliver(withdrawal, lambda s: len(s) == 1)
    assert [n["title"] for n in left] == ["Kept"]
    assert not problems(page)
