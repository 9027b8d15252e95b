"""Sign out removes this browser's devices and ends its push subscription: nothing
reaches the browser afterwards (API.md "People-side limits")."""

from __future__ import annotations

import time

import httpx
from playwright.sync_api import BrowserContext, Page, expect

from tests.browser.conftest import AppServer, problems
from tests.browser.test_webpush import enable_web_push
from tests.fakes.webpush_server import WebPushServer


def _devices(server: AppServer, account: str) -> list[dict[str, object]]:
    response = httpx.get(f"{server.base}/api/devices", headers=server.bearer(account))
    assert response.status_code == 200, response.text
    devices: list[dict[str, object]] = response.json()
    return devices


def _inbox_titles(server: AppServer, account: str) -> list[str]:
    response = httpx.get(f"{server.base}/api/inbox", headers=server.bearer(account))
    assert response.status_code == 200, response.text
    return [item["title"] for item in response.json()["items"]]


def test_sign_out_removes_this_browsers_devices_and_nothing_reaches_it(
    context: BrowserContext, page: Page, server: AppServer, webpush: WebPushServer
) -> None:
    account = server.person()
    publication = server.stream("Deploys", account)
    subscription = enable_web_push(context, page, webpush, account)
    expect(page.get_by_role("listitem").filter(has_text="Browser notifications")).to_be_visible()
    assert {d["platform"] for d in _devices(server, account)} == {"live", "web"}

    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    assert _devices(server, account) == []
    # The subscription is gone from the browser too.
    assert page.evaluate("() => PushManager.prototype.getSubscription()") is None

    publication.send("After sign-out", "Should reach no device")
    deadline = time.monotonic() + 10
    while "After sign-out" not in _inbox_titles(server, account):
        assert time.monotonic() < deadline, "the send never reached the inbox"
        time.sleep(0.05)
    # Deliveries are made when the inbox entry is; give any that exist time to go out.
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        assert webpush.to(subscription) == []
        time.sleep(0.1)
    assert not webpush.errors
    assert not problems(page)
