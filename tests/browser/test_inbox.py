"""The inbox: history page by page as you scroll, offline and back with nothing lost, keyboard."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
from playwright.sync_api import APIResponse, BrowserContext, Page, Route, expect

from tests.browser.conftest import PASSWORD, SERVER_ENV, AppServer, problems, sign_in


def _until_in_the_inbox(server: AppServer, account: str) -> None:
    """Wait (5 s at most) until the server holds an entry in ``account``'s inbox."""
    inbox = f"{server.base}/api/inbox"
    for _ in range(100):
        if httpx.get(inbox, headers=server.bearer(account)).json()["items"]:
            break
        time.sleep(0.05)


def test_history_loads_a_page_at_a_time_as_you_scroll(page: Page, server: AppServer) -> None:
    account = server.person()
    news = server.stream("Ticker", account)
    for n in range(65):
        news.send(f"Tick {n:02d}")
    sign_in(page, account)
    entries = page.get_by_role("list", name="Notifications").get_by_role("listitem")
    expect(entries).to_have_count(30)
    expect(entries.first).to_contain_text("Tick 64")
    expect(page.get_by_text("65 unread")).to_be_visible()
    page.get_by_role("button", name="Load older").scroll_into_view_if_needed()
    expect(entries).to_have_count(60)
    page.get_by_role("button", name="Load older").scroll_into_view_if_needed()
    expect(entries).to_have_count(65)
    expect(entries.last).to_contain_text("Tick 00")
    expect(page.get_by_role("button", name="Load older")).to_be_hidden()
    # Dismissed here, gone there too (and after a reload).
    entries.first.get_by_role("button", name="Actions for Tick 64").click()
    page.get_by_role("menuitem", name="Dismiss").click()
    expect(entries).to_have_count(64)
    page.reload()
    expect(page.get_by_text("64 unread")).to_be_visible()
    assert not problems(page)


def test_offline_says_so_and_catches_up_when_back(
    context: BrowserContext, page: Page, tmp_path: Path
) -> None:
    """The server goes away and comes back; what was sent meanwhile arrives, once, in order."""
    server = AppServer(tmp_path, env=SERVER_ENV)
    server.start()
    try:
        account = server.person()
        news = server.stream("Alerts", account)
        sign_in(page, account, f"{server.base}/app/")
        entries = page.get_by_role("list", name="Notifications").get_by_role("listitem")
        news.send("Before")
        expect(entries.filter(has_text="Before")).to_be_visible(timeout=15_000)

        server.stop()
        expect(page.get_by_role("status")).to_contain_text("Offline")
        # Back, but this browser still cut off while two are sent.
        context.set_offline(True)
        server.start()
        news.send("While away 1")
        news.send("While away 2")
        context.set_offline(False)
        expect(entries.filter(has_text="While away 2")).to_be_visible(timeout=15_000)
        expect(entries.first).to_contain_text("While away 2")
        expect(entries.nth(1)).to_contain_text("While away 1")
        expect(entries).to_have_count(3)
        expect(page.get_by_role("status")).to_be_hidden()
        news.send("Live again")
        expect(entries.first).to_contain_text("Live again")
        expect(entries).to_have_count(4)
    finally:
        server.stop()


def test_an_entry_that_arrives_before_the_channel_opens_is_shown(
    page: Page, server: AppServer
) -> None:
    """The first page is read empty, the entry lands, then the channel opens (without a
    resume point it carries only what comes later): the entry still shows, once."""
    account = server.person()
    news = server.stream("Gap", account)
    held: list[Route] = []
    released = False

    def hold(route: Route) -> None:
        if released:
            route.continue_()
        else:
            held.append(route)

    page.route("**/api/inbox/events*", hold)
    sign_in(page, account)
    expect(page.get_by_text("No notifications yet")).to_be_visible()
    while not held:
        page.wait_for_timeout(50)
    news.send("In the gap")
    _until_in_the_inbox(server, account)
    released = True
    for route in held:
        route.continue_()
    entries = page.get_by_role("list", name="Notifications").get_by_role("listitem")
    expect(entries.filter(has_text="In the gap")).to_be_visible()
    expect(page.get_by_text("1 unread")).to_be_visible()
    news.send("After it")
    expect(entries.first).to_contain_text("After it")
    expect(entries).to_have_count(2)
    assert not problems(page)


def test_keyboard_alone(page: Page, server: AppServer) -> None:
    account = server.person()
    page.goto("/app/")
    expect(page.get_by_label("Account")).to_be_focused()
    page.keyboard.type(account)
    page.keyboard.press("Tab")
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Inbox")).to_be_visible()
    # Focus moves to the new screen; the navigation is just before it.
    expect(page.locator("#main")).to_be_focused()
    page.keyboard.press("Shift+Tab")
    expect(page.get_by_role("link", name="Settings")).to_be_focused()
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Shift+Tab")
    expect(page.get_by_role("link", name="Subscriptions")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Subscriptions")).to_be_visible()
    expect(page.get_by_role("link", name="Subscriptions")).to_have_attribute("aria-current", "page")
    page.get_by_label("Stream code").focus()
    page.keyboard.press("Enter")
    expect(page.get_by_text("Enter the stream's code")).to_be_visible()
    # After a load, the first Tab reaches the skip link, which leads to the content.
    page.reload()
    expect(page.get_by_label("Stream code")).to_be_visible()
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Skip to content")).to_be_focused()
    page.keyboard.press("Enter")
    # The skip link moves focus to the content; on a busy machine that takes a moment.
    expect(page.locator("#main")).to_be_focused()
    page.keyboard.press("Tab")
    expect(page.get_by_label("Stream code")).to_be_focused()


def test_the_unread_count_holds_an_entry_that_arrives_while_the_first_page_is_out(
    page: Page, server: AppServer
) -> None:
    """The first page is answered (one entry, 1 unread), a second entry is sent and shown
    live, and only then does that answer reach the app: the count is 2, not the answer's 1."""
    account = server.person()
    news = server.stream("Race", account)
    news.send("Already there")
    _until_in_the_inbox(server, account)
    held: list[tuple[Route, APIResponse]] = []

    def first_page_late(route: Route) -> None:
        if held:
            route.continue_()
        else:
            held.append((route, route.fetch()))

    page.route("**/api/inbox?*", first_page_late)
    sign_in(page, account)
    while not held:
        page.wait_for_timeout(50)
    assert held[0][1].json()["unread"] == 1
    news.send("Sent meanwhile")
    entries = page.get_by_role("list", name="Notifications").get_by_role("listitem")
    expect(entries.filter(has_text="Sent meanwhile")).to_be_visible()
    route, answer = held[0]
    route.fulfill(response=answer)
    expect(entries.filter(has_text="Already there")).to_be_visible()
    expect(entries).to_have_count(2)
    expect(page.get_by_text("2 unread")).to_be_visible()
    assert not problems(page)
