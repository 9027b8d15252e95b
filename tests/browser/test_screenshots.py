"""Every screen at 360 px, with content: the pictures of docs/app.md.

Kept current by scripts/screenshots.sh, which sets PUSHCORE_SCREENSHOTS to
docs/img; otherwise they go to a temporary directory, and the test is a smoke
run of each screen with an axe scan.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import BrowserContext, expect

from tests.browser.conftest import AppServer, axe_scan, problems, sign_in, watched


def test_each_screen(
    contexts: Callable[[], BrowserContext], server: AppServer, tmp_path: Path
) -> None:
    out = Path(os.environ.get("PUSHCORE_SCREENSHOTS") or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    page = watched(contexts().new_page())

    def shot(name: str) -> None:
        assert not axe_scan(page), name
        page.screenshot(path=str(out / f"app-{name}.png"), full_page=True)

    page.goto("/app/")
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    shot("signin")

    me = server.person("dana")
    news = server.stream("Morning news")
    sign_in(page, me, f"/app/subscribe/{news.code}")
    expect(page.get_by_role("button", name="Subscribe", exact=True)).to_be_visible()
    shot("share-link")
    page.get_by_role("button", name="Subscribe", exact=True).click()
    expect(page.get_by_text("You follow this stream")).to_be_visible()

    page.get_by_role("link", name="Inbox").click()
    for title, body in (
        ("Markets open higher", "Stocks rose in early trading."),
        ("Rain expected", "Take an umbrella this afternoon."),
    ):
        news.send(title, body)
        expect(page.get_by_role("listitem").filter(has_text=title)).to_be_visible()
    page.get_by_role("button", name="Actions for Markets open higher").click()
    page.get_by_role("menuitem", name="Mark read").click()
    expect(page.get_by_text("1 unread")).to_be_visible()
    shot("inbox")

    page.get_by_role("link", name="Subscriptions").click()
    expect(page.get_by_role("listitem").filter(has_text="Morning news")).to_be_visible()
    shot("subscriptions")

    page.get_by_role("link", name="Streams").click()
    page.get_by_role("button", name="New stream").click()
    page.get_by_label("Name").fill("Family")
    page.get_by_label("Description").fill("Dinner's ready and other news")
    page.get_by_role("button", name="Create stream").click()
    card = page.get_by_role("region", name="Family")
    page.wait_for_function(
        "(img) => img.complete && img.naturalWidth > 0",
        arg=card.get_by_role("img").element_handle(),
    )
    shot("streams")

    page.get_by_role("link", name="Settings").click()
    page.get_by_label("Name", exact=True).fill("Home server")
    page.get_by_label("notifications:write").check()
    page.get_by_role("button", name="Create key").click()
    expect(page.locator(".key")).to_be_visible()
    shot("settings")
    assert not problems(page)
