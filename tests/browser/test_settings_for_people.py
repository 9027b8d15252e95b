"""Settings for people (issue 31, point 4): Sign out in view, scopes in words, the app's
own keys left out and dead ones folded, devices named by browser and system, and why
notifications cannot be enabled, in words."""

from __future__ import annotations

import httpx
from playwright.sync_api import Page, Playwright, Route, expect

from pushcore_http.routes.web_app import assets
from tests.browser.conftest import ARGS, CHROMIUM, AppServer, axe_scan, problems, sign_in


def _settings(page: Page) -> None:
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Settings").click()
    expect(page.get_by_role("heading", name="Settings")).to_be_visible()


def test_settings_speak_to_people(sized_page: Page, server: AppServer) -> None:
    page = sized_page
    account = server.person()
    sign_in(page, account)
    # The app makes a publishing key of its own when a stream is created.
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Streams").click()
    page.get_by_role("button", name="New stream").click()
    page.get_by_label("Name").fill("Garden")
    page.get_by_role("button", name="Create stream").click()
    expect(page.get_by_role("region", name="Garden")).to_be_visible()
    _settings(page)
    # Sign out is in view as the screen opens, however long the page.
    expect(page.get_by_role("button", name="Sign out")).to_be_in_viewport()
    expect(page.get_by_role("region", name="Signed in")).to_contain_text(account)
    # Each scope in words beside its name.
    expect(page.get_by_label("notifications:write")).to_have_accessible_description(
        "Send notifications, publish to your streams, mark your inbox read."
    )
    expect(page.get_by_label("devices:read")).to_have_accessible_description(
        "See the devices that receive your notifications."
    )
    # The app's own key exists on the server, but is not the person's to see.
    keys = httpx.get(f"{server.base}/api/keys", headers=server.bearer(account)).json()
    assert [k["name"] for k in keys] == ["Web app (publishing)"]
    expect(page.get_by_text("Web app (publishing)")).to_have_count(0)
    expect(page.get_by_role("list", name="API keys")).to_contain_text("No API key yet.")
    # This browser, named by browser and system.
    here = page.get_by_role("list", name="Devices").get_by_role("listitem")
    expect(here).to_contain_text("Chrome on Linux (open app)")
    expect(here).to_contain_text("(this browser)")
    assert not axe_scan(page)
    assert not problems(page)


def test_over_http_settings_say_why_notifications_cannot_be_enabled(
    playwright: Playwright, server: AppServer
) -> None:
    """A name other than localhost over http is not a secure context: no Web Push."""
    browser = playwright.chromium.launch(
        executable_path=str(CHROMIUM),
        args=[*ARGS, "--host-resolver-rules=MAP push.test 127.0.0.1"],
        headless=True,
    )
    try:
        base = server.base.replace("127.0.0.1", "push.test")
        page = browser.new_context(base_url=base).new_page()
        page.set_default_timeout(10_000)
        sign_in(page, server.person())
        _settings(page)
        expect(page.get_by_text("Notifications need a secure connection")).to_be_visible()
        expect(page.get_by_role("button", name="Enable notifications")).to_have_count(0)
        assert not axe_scan(page)
    finally:
        browser.close()


def test_a_server_without_web_push_is_named_in_settings(page: Page, server: AppServer) -> None:
    """The shell a server without a VAPID subject sends (its meta says off): the app says
    why in words and offers no button that could never work."""
    off = assets("", web_push=False)["index.html"].body

    def shell(route: Route) -> None:
        if route.request.resource_type == "document":
            route.fulfill(body=off, content_type="text/html; charset=utf-8")
        else:
            route.fallback()

    page.route("**/app/**", shell)
    sign_in(page, server.person())
    _settings(page)
    expect(page.get_by_text("This server does not send Web Push yet")).to_be_visible()
    expect(page.get_by_role("button", name="Enable notifications")).to_have_count(0)
