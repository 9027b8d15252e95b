"""Sign in, reload keeping the session, sign out; the session's token never reaches storage."""

from __future__ import annotations

import time
from typing import Any

from playwright.sync_api import Page, expect

from tests.browser.conftest import PASSWORD, AppServer, problems, sign_in


def test_sign_in_reload_and_sign_out(page: Page, server: AppServer) -> None:
    account = server.person()
    page.goto("/")
    expect(page).to_have_url(f"{server.base}/app/")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    page.get_by_label("Account").fill(account)
    page.get_by_label("Password", exact=True).fill("wrong password")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_text("Invalid account or password")).to_be_visible()
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    nav = page.get_by_role("navigation", name="Main")
    for name in ("Inbox", "Subscriptions", "Streams", "Settings"):
        expect(nav.get_by_role("link", name=name)).to_be_visible()

    # No token where a script could read it across reloads.
    stored = page.evaluate(
        "() => JSON.stringify([{...localStorage}, {...sessionStorage}, document.cookie])"
    )
    assert "psr_" not in stored
    assert "eyJ" not in stored
    # The cookie store takes the login answer's cookie a moment after the page has it.
    refresh: list[Any] = []
    deadline = time.monotonic() + 5
    while not refresh and time.monotonic() < deadline:
        page.wait_for_timeout(50)
        refresh = [c for c in page.context.cookies() if c["name"] == "pushcore_refresh"]
    assert refresh
    assert refresh[0]["httpOnly"]
    assert refresh[0]["sameSite"] == "Strict"
    assert refresh[0]["path"] == "/app/session"

    page.reload()
    expect(page.get_by_role("navigation", name="Main")).to_be_visible()
    expect(page.get_by_role("heading", name="Sign in")).to_have_count(0)

    page.get_by_role("link", name="Settings").click()
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    page.reload()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert not problems(page)


def test_a_share_link_keeps_its_place_through_sign_in(page: Page, server: AppServer) -> None:
    account = server.person()
    sign_in(page, account, "/app/settings")
    expect(page.get_by_role("heading", name="Settings")).to_be_visible()


def test_create_account_when_sign_up_is_on(page: Page, server: AppServer) -> None:
    page.goto("/app/")
    page.get_by_label("Account").fill("Newcomer")
    page.get_by_label("Password", exact=True).fill("short")
    page.get_by_role("button", name="Create account").click()
    password = page.get_by_label("Password", exact=True)
    expect(password).to_have_attribute("aria-invalid", "true")
    password.fill(PASSWORD)
    page.get_by_role("button", name="Create account").click()
    expect(page.get_by_role("heading", name="Inbox")).to_be_visible()
    # Taken now: said beside the account field.
    page.get_by_role("link", name="Settings").click()
    page.get_by_role("button", name="Sign out").click()
    page.get_by_label("Account").fill("newcomer")
    page.get_by_label("Password", exact=True).fill(PASSWORD)
    page.get_by_role("button", name="Create account").click()
    expect(page.get_by_label("Account")).to_have_attribute("aria-invalid", "true")
    expect(page.get_by_text("That account name is taken")).to_be_visible()
    assert not problems(page)
