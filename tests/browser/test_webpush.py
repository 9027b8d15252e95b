"""Enable notifications: a `web` device with the server's VAPID key, a push the server
encrypts for it, and the notification the service worker shows for it.

Headless Chromium has no push service, so the page's ``PushManager.subscribe``
answers a subscription of the fake Web Push service (tests/fakes), which checks
and decrypts what the server posts; the decrypted message is then handed to the
service worker as the browser would, through the DevTools protocol
(``ServiceWorker.deliverPushMessage``).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx
from playwright.sync_api import BrowserContext, Page, expect

from tests.browser.conftest import AppServer, problems, sign_in
from tests.fakes.webpush_server import FakeSubscription, WebPushServer

FAKE_PUSH_MANAGER = """
(subscription) => {
  let current = null;
  PushManager.prototype.getSubscription = async function () { return current; };
  PushManager.prototype.subscribe = async function (options) {
    const key = new Uint8Array(options.applicationServerKey);
    window.__vapidKeyLength = key.length;
    current = {
      endpoint: subscription.endpoint,
      toJSON: () => ({endpoint: subscription.endpoint, keys: subscription.keys}),
      unsubscribe: async () => { current = null; return true; },
    };
    return current;
  };
}
"""


def enable_web_push(
    context: BrowserContext, page: Page, webpush: WebPushServer, account: str
) -> FakeSubscription:
    """Sign ``account`` in and press Enable notifications, with the fake push service's
    subscription standing in for the browser's."""
    subscription = webpush.subscribe()
    context.grant_permissions(["notifications"])
    sign_in(page, account)
    page.evaluate("() => navigator.serviceWorker.ready.then(() => true)")
    page.evaluate(
        FAKE_PUSH_MANAGER,
        {
            "endpoint": subscription.endpoint,
            "keys": {"p256dh": subscription.p256dh, "auth": subscription.auth},
        },
    )
    page.get_by_role("link", name="Settings").click()
    page.get_by_role("button", name="Enable notifications").click()
    return subscription


SHOWN = """async () => {
  const registration = await navigator.serviceWorker.ready;
  const all = await registration.getNotifications();
  return all.map((n) => ({title: n.title, body: n.body, icon: n.icon, tag: n.tag}));
}"""


def test_enable_notifications_and_the_worker_shows_a_push(
    context: BrowserContext, page: Page, server: AppServer, webpush: WebPushServer
) -> None:
    account = server.person()
    subscription = enable_web_push(context, page, webpush, account)
    web_device = page.get_by_role("listitem").filter(has_text="Browser notifications")
    expect(web_device).to_be_visible()
    expect(web_device).to_contain_text("(this browser)")
    # The server's VAPID key, as an uncompressed P-256 point.
    assert page.evaluate("() => window.__vapidKeyLength") == 65

    server.stream("Deploys", account).send("Deployed v2", "All green")
    deadline = time.monotonic() + 10
    while not webpush.to(subscription) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not webpush.errors
    [message] = webpush.to(subscription)
    assert message.payload["title"] == "Deployed v2"
    assert message.payload["sender"]["name"] == "Deploys"

    shown = deliver_push(context, page, server, message.plaintext)
    assert shown == [
        {
            "title": "Deployed v2",
            "body": "Deploys\nAll green",
            "icon": f"{server.base}/app/icons/icon-192.png",
            "tag": message.payload["notificationId"],
        }
    ]
    assert json.loads(message.plaintext)["notificationId"] == message.payload["notificationId"]
    # A click on it opens the app at that entry (the worker's notificationclick target).
    page.goto(f"/app/?notification={message.payload['notificationId']}")
    entry = page.locator(".entry.highlight")
    expect(entry).to_contain_text("Deployed v2")
    expect(entry).not_to_contain_text("Unread")
    assert not problems(page)


def shown_within(page: Page, check: Callable[[Any], bool], seconds: float = 10) -> Any:
    """The notifications the worker shows, once ``check`` holds for them (or at the
    deadline)."""
    deadline = time.monotonic() + seconds
    shown = page.evaluate(SHOWN)
    while not check(shown) and time.monotonic() < deadline:
        page.wait_for_timeout(100)
        shown = page.evaluate(SHOWN)
    return shown


def deliver_push(
    context: BrowserContext,
    page: Page,
    server: AppServer,
    plaintext: bytes,
    check: Callable[[Any], bool] = bool,
) -> Any:
    """Wake the app's worker with a decrypted message, as the browser would, again every
    2 s until ``check`` holds for what it shows (up to 20 s); what it shows then.

    A push handed to DevTools while the worker is starting can be dropped (CI showed it
    three times under load, the last with nothing else in flight). A repeat does no harm:
    the worker shows each notification under its own tag, and a withdrawal only closes."""
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
    deadline = time.monotonic() + 20
    while True:
        cdp.send(
            "ServiceWorker.deliverPushMessage",
            {
                "origin": server.base,
                "registrationId": registration["registrationId"],
                "data": plaintext.decode(),
            },
        )
        shown = shown_within(page, check, seconds=min(2.0, deadline - time.monotonic()))
        if check(shown) or time.monotonic() >= deadline:
            return shown


CLICK = """async () => {
  const [shown] = await self.registration.getNotifications();
  self.dispatchEvent(new NotificationEvent("notificationclick", {notification: shown}));
  return true;
}"""


def test_the_worker_reports_displayed_then_opened(
    context: BrowserContext, page: Page, server: AppServer, webpush: WebPushServer
) -> None:
    account = server.person()
    subscription = enable_web_push(context, page, webpush, account)
    expect(page.get_by_role("listitem").filter(has_text="Browser notifications")).to_be_visible()
    publication = server.stream("Releases", account)
    publication.send("Released v3")
    deadline = time.monotonic() + 10
    while not webpush.to(subscription) and time.monotonic() < deadline:
        time.sleep(0.05)
    [message] = webpush.to(subscription)
    assert message.payload["receipt"].startswith("rct_")
    reader = httpx.post(
        f"{server.base}/api/keys",
        json={"name": "read", "scopes": ["notifications:read"]},
        headers=server.bearer(publication.publisher),
    ).json()["key"]
    url = f"{server.base}/api/notifications/{message.payload['notificationId']}/deliveries"

    def delivery() -> dict[str, object]:
        items = httpx.get(url, headers={"X-API-Key": reader}).json()["items"]
        # The open app follows the live channel too: that is a delivery of its own.
        [item] = [i for i in items if i["platform"] == "web"]
        found: dict[str, object] = item
        return found

    def wait_for(field: str) -> dict[str, object]:
        deadline = time.monotonic() + 10
        while (item := delivery())[field] is None and time.monotonic() < deadline:
            page.wait_for_timeout(100)
        return item

    assert delivery()["displayedAt"] is None
    deliver_push(context, page, server, message.plaintext)
    shown = wait_for("displayedAt")
    assert shown["displayedAt"] is not None
    assert shown["openedAt"] is None

    [worker] = [w for w in context.service_workers if w.url.endswith("/app/sw.js")]
    worker.evaluate(CLICK)
    opened = wait_for("openedAt")
    assert opened["openedAt"] is not None
    assert opened["displayedAt"] == shown["displayedAt"]
