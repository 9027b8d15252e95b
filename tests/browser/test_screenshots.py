"""Every screen at 360 px and at 1280 px, with content: the pictures of docs/app.md.

Kept current by scripts/screenshots.sh, which sets PUSHCORE_SCREENSHOTS to
docs/img; otherwise they go to a temporary directory, and the test is a smoke
run of each screen at both sizes, light and dark, with an axe scan of each.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.browser.conftest import (
    COLOUR_RULES,
    SIZES,
    AppServer,
    axe_scan,
    problems,
    sign_in,
    watched,
)


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("size", sorted(SIZES))
def test_each_screen(browser: Browser, server: AppServer, size: str, scheme: str) -> None:
    # Pictures only for scripts/screenshots.sh: in the suite, each of the 36 full-page
    # captures was a rasterized, PNG-encoded page that nothing looked at.
    out = Path(os.environ["PUSHCORE_SCREENSHOTS"]) if "PUSHCORE_SCREENSHOTS" in os.environ else None
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(
        base_url=server.base,
        viewport=SIZES[size],
        color_scheme="dark" if scheme == "dark" else "light",
    )
    context.set_default_timeout(10_000)
    try:
        page = watched(context.new_page())
        # The dark scheme changes colours only (app.css): its scans check the colour
        # rules; the light one's check them all on the same screens.
        rules = COLOUR_RULES if scheme == "dark" else ()
        _tour(page, server, lambda name: _shot(page, out, f"app-{name}-{size}-{scheme}", rules))
        assert not problems(page)
    finally:
        context.close()


def _shot(page: Page, out: Path | None, name: str, rules: tuple[str, ...]) -> None:
    assert not axe_scan(page, rules), name
    # Wait for images (icons, the QR code) so that the picture is what a person sees.
    page.wait_for_function("() => [...document.images].every((img) => img.complete)")
    if out is None:
        return
    # The whole page in a window as tall as it, so that the fixed tab bar is drawn at its
    # foot (a full-page capture of a short window draws it halfway down).
    size = page.viewport_size
    assert size
    height = page.evaluate("() => document.documentElement.scrollHeight")
    page.set_viewport_size({"width": size["width"], "height": max(size["height"], height)})
    page.screenshot(path=str(out / f"{name}.png"))
    page.set_viewport_size(size)


def _tour(page: Page, server: AppServer, shot: Callable[[str], None]) -> None:
    """Each screen with content, shot as a person would first see it."""
    news = server.stream("Morning news")
    ci = server.stream("CI builds")
    page.goto(f"/app/subscribe/{news.code}")
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    shot("share-link-signed-out")

    page.goto("/app/")
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    shot("signin")

    me = server.person("dana")
    sign_in(page, me, f"/app/subscribe/{news.code}")
    expect(page.get_by_role("button", name="Subscribe", exact=True)).to_be_visible()
    shot("share-link")
    page.get_by_role("button", name="Subscribe", exact=True).click()
    expect(page.get_by_text("You follow this stream")).to_be_visible()

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Subscriptions").click()
    page.get_by_label("Stream code").fill(ci.code)
    page.get_by_role("button", name="Subscribe", exact=True).click()
    expect(page.get_by_role("listitem").filter(has_text="CI builds")).to_be_visible()
    shot("subscriptions")

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Inbox").click()
    expect(page.get_by_role("heading", name="No notifications yet")).to_be_visible()
    shot("inbox-empty")
    for stream, title, body, priority in (
        (news, "Markets open higher", "Stocks rose in early trading.", "normal"),
        (ci, "Deploy slow", "p95 latency above 800 ms for 10 minutes", "high"),
        (ci, "Build failed", "main #482: 3 tests failed in tests/http", "critical"),
        (news, "Rain expected", "Take an umbrella this afternoon.", "normal"),
    ):
        stream.send(title, body, priority)
        expect(page.get_by_role("listitem").filter(has_text=title)).to_be_visible()
    page.get_by_role("button", name="Actions for Markets open higher").click()
    page.get_by_role("menuitem", name="Mark read").click()
    expect(page.get_by_text("3 unread")).to_be_visible()
    shot("inbox")
    page.get_by_role("button", name="Actions for Rain expected").click()
    expect(page.get_by_role("menuitem", name="Dismiss")).to_be_visible()
    shot("inbox-menu")
    page.keyboard.press("Escape")

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Streams").click()
    page.get_by_role("button", name="New stream").click()
    page.get_by_label("Name").fill("Family")
    page.get_by_label("Description").fill("Dinner's ready and other news")
    page.get_by_role("button", name="Create stream").click()
    family = page.get_by_role("region", name="Family")
    family.get_by_label("Title").fill("Dinner at 7")
    family.get_by_role("button", name="Send").click()
    expect(family.get_by_text("Sent to 0 subscribers")).to_be_visible()
    family.get_by_text("Sent", exact=True).click()
    expect(family.get_by_role("list", name="Sent to Family")).to_contain_text("Dinner at 7")
    # When at each recipient's own clock, on weekdays: the next five times as wall-clock times.
    family.get_by_label("Each recipient's local time").check()
    family.get_by_label("Time", exact=True).fill("07:30")
    family.get_by_label("Repeat").select_option("Weekdays")
    times = family.get_by_role("list", name="Next five times").get_by_role("listitem")
    expect(times).to_have_count(5)
    expect(times.first).to_contain_text("each recipient's time")
    shot("streams")

    page.get_by_role("navigation", name="Main").get_by_role("link", name="Settings").click()
    page.get_by_label("Name", exact=True).fill("Home server")
    page.get_by_label("notifications:write").check()
    page.get_by_role("button", name="Create key").click()
    expect(page.locator(".key")).to_be_visible()
    expect(page.get_by_role("form", name="Quiet hours")).to_be_visible()
    shot("settings")
