"""Phone first (API.md, "The web app"): the four tabs in one row fixed at the bottom up to
600 px and at the top above; every screen opening at its top; 44 px touch targets; an
entry's actions behind a menu that the keyboard reaches; the main loop by keyboard alone."""

from __future__ import annotations

from playwright.sync_api import Locator, Page, expect

from tests.browser.conftest import PASSWORD, SIZES, AppServer, axe_scan, problems, sign_in

TABS = ("Inbox", "Subscriptions", "Streams", "Settings")
# What a finger or a pointer aims at: every control but a checkbox (its label is the
# target) and a link inside a sentence (WCAG 2.5.8 exempts inline links).
SMALL_TARGETS = """() => [...document.querySelectorAll(
    'button, select, input:not([type=checkbox]), textarea, nav a, a.button, .check')]
  .filter((el) => el.getClientRects().length && getComputedStyle(el).visibility !== 'hidden')
  .map((el) => [el.textContent.trim() || el.getAttribute('aria-label') || el.name,
                el.getBoundingClientRect()])
  .filter(([, box]) => box.height < 44 || box.width < 44)
  .map(([name, box]) => `${name}: ${Math.round(box.width)}x${Math.round(box.height)}`)"""


def _is_phone(page: Page) -> bool:
    size = page.viewport_size
    return size is not None and size["width"] <= 600


def _nav_in_view(page: Page) -> None:
    nav = page.get_by_role("navigation", name="Main")
    for tab in TABS:
        expect(nav.get_by_role("link", name=tab)).to_be_in_viewport()


def test_the_tabs_are_one_row_at_the_bottom_of_a_phone_and_at_the_top_above(
    sized_page: Page, server: AppServer
) -> None:
    page = sized_page
    account = server.person()
    feed = server.stream("Feed", account)
    for n in range(25):
        feed.send(f"Item {n:02d}", "A line of text")
    sign_in(page, account)
    expect(page.get_by_text("25 unread")).to_be_visible()
    nav = page.get_by_role("navigation", name="Main")
    boxes = [nav.get_by_role("link", name=tab).bounding_box() for tab in TABS]
    assert all(boxes)
    tops = {round(box["y"]) for box in boxes if box}
    assert len(tops) == 1, f"the tabs are on {len(tops)} rows"
    for box in boxes:
        assert box
        assert min(box["height"], box["width"]) >= 44, box
    nav_box = nav.bounding_box()
    assert nav_box
    height = SIZES["phone" if _is_phone(page) else "desktop"]["height"]
    if _is_phone(page):
        assert round(nav_box["y"] + nav_box["height"]) == height
    else:
        assert nav_box["y"] < 80
    # Scrolled down, the tabs stay in view.
    page.mouse.wheel(0, 3000)
    page.wait_for_function("() => window.scrollY > 300")
    _nav_in_view(page)
    assert not problems(page)


def test_every_screen_opens_at_its_top(sized_page: Page, server: AppServer) -> None:
    page = sized_page
    account = server.person()
    feed = server.stream("Feed", account)
    for n in range(40):
        feed.send(f"Item {n:02d}", "A line of text")
    sign_in(page, account)
    expect(page.get_by_text("40 unread")).to_be_visible()
    # The inbox opens at its top, the header and its heading in view.
    assert page.evaluate("window.scrollY") == 0
    expect(page.get_by_role("heading", name="Inbox")).to_be_in_viewport()
    expect(page.get_by_role("banner")).to_be_in_viewport()
    _nav_in_view(page)
    for tab in ("Subscriptions", "Streams", "Settings", "Inbox"):
        page.mouse.wheel(0, 5000)
        page.get_by_role("navigation", name="Main").get_by_role("link", name=tab).click()
        expect(page.get_by_role("heading", name=tab, exact=True)).to_be_in_viewport()
        assert page.evaluate("window.scrollY") == 0, tab
        _nav_in_view(page)
    assert not problems(page)


def test_touch_targets_are_at_least_44_px_on_every_screen(
    sized_page: Page, server: AppServer
) -> None:
    page = sized_page
    account = server.person()
    feed = server.stream("Feed", account)
    feed.send("Something happened", "Details")
    sign_in(page, account)
    expect(page.get_by_text("1 unread")).to_be_visible()
    assert page.evaluate(SMALL_TARGETS) == []
    loaded = {
        "Subscriptions": page.get_by_role("listitem").filter(has_text="Feed"),
        "Streams": page.get_by_text("You publish no stream yet."),
        "Settings": page.get_by_role("listitem").filter(has_text="(this browser)"),
    }
    for tab, shown in loaded.items():
        page.get_by_role("navigation", name="Main").get_by_role("link", name=tab).click()
        expect(shown).to_be_visible()
        assert page.evaluate(SMALL_TARGETS) == [], tab


def test_an_entry_is_compact_and_its_actions_are_behind_a_menu(
    sized_page: Page, server: AppServer
) -> None:
    page = sized_page
    account = server.person()
    feed = server.stream("Feed", account)
    feed.send("Disk almost full", "92% used on /var")
    feed.send("Backup done", "Nightly backup finished")
    sign_in(page, account)
    entries = page.get_by_role("list", name="Notifications").get_by_role("listitem")
    expect(entries).to_have_count(2)
    # One row each, not a card of buttons: no action shows until asked for.
    expect(page.get_by_role("button", name="Dismiss")).to_have_count(0)
    expect(page.get_by_role("button", name="Mark read")).to_have_count(0)
    entry = entries.filter(has_text="Disk almost full")
    row = entry.locator(".entry-row").bounding_box()
    assert row
    assert row["height"] <= 100, row

    # By keyboard: the menu opens on the first action, arrows move, Escape closes.
    actions = page.get_by_role("button", name="Actions for Disk almost full")
    actions.focus()
    page.keyboard.press("Enter")
    expect(actions).to_have_attribute("aria-expanded", "true")
    expect(page.get_by_role("menuitem", name="Mark read")).to_be_focused()
    assert not axe_scan(page)
    page.keyboard.press("ArrowDown")
    expect(page.get_by_role("menuitem", name="Dismiss")).to_be_focused()
    page.keyboard.press("Escape")
    expect(page.get_by_role("menu")).to_have_count(0)
    expect(actions).to_be_focused()
    page.keyboard.press("Enter")
    page.keyboard.press("Enter")
    expect(page.get_by_text("1 unread")).to_be_visible()
    expect(entry.get_by_text("Unread")).to_have_count(0)
    # Focus stays on the entry's menu button, which now offers Dismiss alone.
    expect(actions).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.get_by_role("menuitem")).to_have_count(1)
    page.keyboard.press("Enter")
    expect(entries).to_have_count(1)
    # By pointer: a tap on an unread entry reads it; a tap outside closes a menu.
    other = entries.filter(has_text="Backup done")
    other.get_by_role("heading", name="Backup done").click()
    expect(page.get_by_text("0 unread")).to_be_visible()
    page.get_by_role("button", name="Actions for Backup done").click()
    expect(page.get_by_role("menu")).to_be_visible()
    page.get_by_role("heading", name="Inbox").click()
    expect(page.get_by_role("menu")).to_have_count(0)
    assert not problems(page)


def _tab_to(page: Page, target: Locator, key: str = "Tab", limit: int = 40) -> None:
    """Press ``key`` until ``target`` has the focus, as a keyboard user would."""
    for _ in range(limit):
        if target.evaluate("(el) => el === document.activeElement"):
            return
        page.keyboard.press(key)
    raise AssertionError(f"{target} never took the focus")


def test_the_main_loop_by_keyboard_alone(sized_page: Page, server: AppServer) -> None:
    """Sign in, subscribe, read, sign out: keys only, no click."""
    page = sized_page
    account = server.person()
    news = server.stream("Keyboard news")
    page.goto("/app/")
    expect(page.get_by_label("Account")).to_be_focused()
    page.keyboard.type(account)
    page.keyboard.press("Tab")
    page.keyboard.type(PASSWORD)
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Inbox")).to_be_visible()
    nav = page.get_by_role("navigation", name="Main")

    _tab_to(page, nav.get_by_role("link", name="Subscriptions"), "Shift+Tab")
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Subscriptions")).to_be_visible()
    _tab_to(page, page.get_by_label("Stream code"))
    page.keyboard.type(news.code)
    page.keyboard.press("Enter")
    expect(page.get_by_role("listitem").filter(has_text="Keyboard news")).to_be_visible()

    _tab_to(page, nav.get_by_role("link", name="Inbox"), "Shift+Tab")
    page.keyboard.press("Enter")
    expect(page.get_by_text("0 unread")).to_be_visible()
    news.send("Read me by keyboard", "No mouse needed")
    expect(page.get_by_text("1 unread")).to_be_visible()
    _tab_to(page, page.get_by_role("button", name="Actions for Read me by keyboard"))
    page.keyboard.press("Enter")
    page.keyboard.press("Enter")
    expect(page.get_by_text("0 unread")).to_be_visible()

    _tab_to(page, nav.get_by_role("link", name="Settings"), "Shift+Tab")
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Settings")).to_be_visible()
    _tab_to(page, page.get_by_role("button", name="Sign out"), limit=80)
    page.keyboard.press("Enter")
    expect(page.get_by_text("You have signed out")).to_be_visible()
    assert not problems(page)
