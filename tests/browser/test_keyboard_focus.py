"""Focus stays where the keyboard put it while a screen's data is still on its way."""

from __future__ import annotations

import time

from playwright.sync_api import Page, Route, expect

from tests.browser.conftest import AppServer, problems, sign_in


def test_a_screen_whose_data_comes_late_leaves_the_keyboards_focus_alone(
    page: Page, server: AppServer
) -> None:
    # The subscriptions list is held until the person has moved into the screen: the
    # order a slow server or a loaded machine gives. Its arrival must not take focus
    # back to the screen's top, and the skip link must not show the screen again.
    held: list[Route] = []

    def hold(route: Route) -> None:
        held.append(route)

    page.route("**/api/streams/subscriptions", hold)

    def release() -> None:
        deadline = time.monotonic() + 10
        while not held:
            assert time.monotonic() < deadline, "the app did not ask for its subscriptions"
            page.wait_for_timeout(20)
        while held:
            held.pop().continue_()

    sign_in(page, server.person())
    release()  # the inbox's
    code = page.get_by_label("Stream code")
    listed = page.get_by_text("You follow no stream yet.")

    page.get_by_role("link", name="Subscriptions").focus()
    page.keyboard.press("Enter")
    # Focus is on the new screen as soon as it shows, not once its data is in.
    expect(page.locator("#main")).to_be_focused()
    page.keyboard.press("Tab")
    expect(code).to_be_focused()
    release()
    expect(listed).to_be_visible()
    expect(code).to_be_focused()

    page.reload()
    release()
    expect(listed).to_be_visible()
    shown = code.element_handle()
    page.keyboard.press("Tab")
    expect(page.get_by_role("link", name="Skip to content")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#main")).to_be_focused()
    page.keyboard.press("Tab")
    expect(code).to_be_focused()
    # An in-page link: the same screen, not a second one over it.
    assert shown.evaluate("input => input.isConnected")
    assert not held
    assert not problems(page)
