"""Who and where (API.md, "The web app"): the account in the header, `You have signed
out`, the live channel's loss and return said within 5 s, a share link opened signed out."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
from playwright.sync_api import Browser, Page, Route, expect

from tests.browser.conftest import (
    PASSWORD,
    SERVER_ENV,
    SIZES,
    AppServer,
    axe_scan,
    problems,
    sign_in,
    watched,
)


def test_the_header_names_the_account_and_sign_out_says_so(
    sized_page: Page, server: AppServer
) -> None:
    page = sized_page
    account = server.person("who")
    sign_in(page, account)
    expect(page.get_by_role("banner")).to_contain_text(account)
    expect(page.get_by_role("banner").get_by_text(account)).to_be_visible()
    page.get_by_role("link", name="Settings").click()
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_text("You have signed out")).to_be_visible()
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    expect(page.get_by_role("banner")).not_to_contain_text(account)
    assert not axe_scan(page)
    # Signing in again: the notice is gone, the header names the account again.
    page.get_by_label("Account").fill(account)
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("banner")).to_contain_text(account)
    expect(page.get_by_text("You have signed out")).to_have_count(0)
    assert not problems(page)


def test_losing_the_server_is_said_within_5_s_and_its_return_too(
    browser: Browser, tmp_path: Path
) -> None:
    """Away long enough for a doubling backoff to outgrow 5 s; no reload, no click."""
    server = AppServer(tmp_path, env=SERVER_ENV)
    server.start()
    context = browser.new_context(base_url=server.base, viewport=SIZES["phone"])
    try:
        page = watched(context.new_page())
        account = server.person()
        news = server.stream("Alerts", account)
        sign_in(page, account)
        lost = page.get_by_text("Offline").or_(page.get_by_text("Reconnecting"))
        expect(page.get_by_role("heading", name="Inbox")).to_be_visible()
        expect(lost).to_have_count(0)

        went = time.monotonic()
        server.stop()
        expect(lost.first).to_be_visible(timeout=max(1, 5 - (time.monotonic() - went)) * 1000)
        # The server stays away a while: the time is the point here, not a wait for an event.
        page.wait_for_timeout(16_000)
        expect(lost.first).to_be_visible()

        server.start()
        back = time.monotonic()
        expect(lost).to_have_count(0, timeout=max(1, 5 - (time.monotonic() - back)) * 1000)
        news.send("After the outage")
        entries = page.get_by_role("list", name="Notifications").get_by_role("listitem")
        expect(entries.filter(has_text="After the outage")).to_be_visible()
        assert page.evaluate("performance.getEntriesByType('navigation').length") == 1
    finally:
        context.close()
        server.stop()


def _lookup_without_credential(server: AppServer, code: str) -> httpx.Response:
    return httpx.get(f"{server.base}/api/streams/lookup/{code}")


def test_a_share_link_signed_out_invites_and_leads_back_to_the_stream(
    sized_page: Page, server: AppServer
) -> None:
    """Against the real server: named when it answers the lookup signed out, else by code."""
    page = sized_page
    news = server.stream("Harbour news")
    page.goto(f"/app/subscribe/{news.code}")
    if _lookup_without_credential(server, news.code).status_code == 200:
        expect(page.get_by_role("heading", name="Sign in to follow Harbour news")).to_be_visible()
        expect(page.get_by_text("About Harbour news")).to_be_visible()
    else:
        expect(page.get_by_role("heading", name="Sign in to follow this stream")).to_be_visible()
        expect(page.get_by_text(news.code)).to_be_visible()
    assert not axe_scan(page)
    page.get_by_label("Account").fill(server.person())
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    # Back at the stream the link named, ready to follow.
    expect(page.get_by_role("heading", name="Harbour news")).to_be_visible()
    page.get_by_role("button", name="Subscribe", exact=True).click()
    expect(page.get_by_text("You follow this stream")).to_be_visible()
    assert page.url.endswith(f"/app/subscribe/{news.code}")
    assert not problems(page)


def test_a_share_link_signed_out_names_the_stream_when_the_lookup_answers(
    sized_page: Page, server: AppServer
) -> None:
    """The credential-free lookup API.md pins (`{name, code, description, iconUrl}`),
    answered here for a request without a credential until the server does so itself;
    then sign-up leads to the stream too."""
    page = sized_page
    news = server.stream("Morning news")

    def lookup(route: Route) -> None:
        if "authorization" in route.request.headers:
            route.continue_()
            return
        body = {
            "name": "Morning news",
            "code": news.code,
            "description": "The day's headlines at seven",
            "iconUrl": f"{server.base}/app/icons/icon-192.png",
        }
        route.fulfill(status=200, content_type="application/json", body=json.dumps(body))

    page.route(f"**/api/streams/lookup/{news.code}", lookup)
    page.goto(f"/app/subscribe/{news.code}")
    expect(page.get_by_role("heading", name="Sign in to follow Morning news")).to_be_visible()
    expect(page.get_by_text("The day's headlines at seven")).to_be_visible()
    icon = page.locator("main img")
    expect(icon).to_have_attribute("src", f"{server.base}/app/icons/icon-192.png")
    assert not axe_scan(page)
    page.get_by_label("Account").fill(f"new{time.monotonic_ns() % 10**8}")
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Create account").click()
    expect(page.get_by_role("heading", name="Morning news")).to_be_visible()
    expect(page.get_by_role("button", name="Subscribe", exact=True)).to_be_visible()
    assert not problems(page)
