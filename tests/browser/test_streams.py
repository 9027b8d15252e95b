"""Streams and subscriptions: publish, share, subscribe by link and by code; a send arrives live."""

from __future__ import annotations

from collections.abc import Callable

from playwright.sync_api import BrowserContext, Page, expect

from tests.browser.conftest import AppServer, axe_scan, problems, sign_in, watched


def _new_stream(page: Page, name: str) -> str:
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Streams").click()
    expect(page.get_by_label("Name")).to_be_hidden()
    page.get_by_role("button", name="New stream").click()
    page.get_by_label("Name").fill(name)
    page.get_by_label("Description").fill(f"What {name} says")
    page.get_by_role("button", name="Create stream").click()
    card = page.get_by_role("region", name=name)
    expect(card).to_be_visible()
    expect(page.get_by_label("Name")).to_be_hidden()  # the form closes once created
    expect(card.get_by_text("0 subscribers")).to_be_visible()
    code: str = card.locator("code").inner_text()
    expect(card.get_by_role("link", name=f"/app/subscribe/{code}")).to_be_visible()
    qr = card.get_by_role("img", name=f"QR code of the share link of {name}")
    expect(qr).to_be_visible()
    page.wait_for_function("(img) => img.complete && img.naturalWidth > 0", arg=qr.element_handle())
    return code


def test_publish_share_subscribe_and_a_send_arrives_live(
    contexts: Callable[[], BrowserContext], server: AppServer
) -> None:
    publisher = watched(contexts().new_page())
    sign_in(publisher, server.person("pub"))
    code = _new_stream(publisher, "Weather alerts")
    assert not axe_scan(publisher)

    # The share link, opened before signing in, shows the stream after it.
    reader = watched(contexts().new_page())
    sign_in(reader, server.person("sub"), f"/app/subscribe/{code}")
    expect(reader.get_by_role("heading", name="Weather alerts")).to_be_visible()
    reader.get_by_role("button", name="Subscribe", exact=True).click()
    expect(reader.get_by_text("You follow this stream")).to_be_visible()
    assert not axe_scan(reader)

    reader.get_by_role("link", name="Inbox").click()
    expect(reader.get_by_role("heading", name="Inbox")).to_be_visible()
    expect(reader.get_by_text("0 unread")).to_be_visible()

    card = publisher.get_by_role("region", name="Weather alerts")
    publisher.reload()
    expect(card.get_by_text("1 subscriber")).to_be_visible()
    card.get_by_label("Title").fill("Storm warning")
    card.get_by_label("Body").fill("Gusts of 100 km/h after 18:00")
    card.get_by_role("button", name="Send").click()
    expect(card.get_by_text("Sent to 1 subscriber")).to_be_visible()

    # Live, without a reload: the entry, marked unread, with the stream's name.
    entry = reader.get_by_role("listitem").filter(has_text="Storm warning")
    expect(entry).to_be_visible()
    expect(entry.get_by_text("Gusts of 100 km/h after 18:00")).to_be_visible()
    expect(entry.get_by_text("Weather alerts")).to_be_visible()
    expect(entry.get_by_text("Unread")).to_be_visible()
    expect(reader.get_by_text("1 unread")).to_be_visible()
    assert not axe_scan(reader)
    reader.get_by_role("button", name="Mark all read").click()
    expect(reader.get_by_text("0 unread")).to_be_visible()
    expect(entry.get_by_text("Unread")).to_have_count(0)
    # Read stays read after a reload (the server's state, not the page's).
    reader.reload()
    expect(reader.get_by_role("listitem").filter(has_text="Storm warning")).to_be_visible()
    expect(reader.get_by_text("0 unread")).to_be_visible()

    publisher.once("dialog", lambda dialog: dialog.accept())
    card.get_by_role("button", name="Delete").click()
    expect(publisher.get_by_role("region", name="Weather alerts")).to_have_count(0)
    assert not problems(publisher)
    assert not problems(reader)


def test_subscribe_by_code_and_unsubscribe(
    contexts: Callable[[], BrowserContext], server: AppServer
) -> None:
    publisher = watched(contexts().new_page())
    sign_in(publisher, server.person("pub"))
    code = _new_stream(publisher, "Release notes")

    reader = watched(contexts().new_page())
    sign_in(reader, server.person("sub"))
    reader.get_by_role("link", name="Subscriptions").click()
    field = reader.get_by_label("Stream code")
    field.fill("nothing-2222")
    reader.get_by_role("button", name="Subscribe", exact=True).click()
    expect(reader.get_by_text("No stream has this code")).to_be_visible()
    expect(field).to_have_attribute("aria-invalid", "true")
    field.fill(code)
    reader.get_by_role("button", name="Subscribe", exact=True).click()
    item = reader.get_by_role("listitem").filter(has_text="Release notes")
    expect(item).to_be_visible()
    expect(field).to_have_value("")
    assert not axe_scan(reader)
    field.fill(code)
    reader.get_by_role("button", name="Subscribe", exact=True).click()
    expect(reader.get_by_text("You already follow this stream.")).to_be_visible()
    item.get_by_role("button", name="Unsubscribe").click()
    expect(item).to_have_count(0)
    expect(reader.get_by_text("You follow no stream yet.")).to_be_visible()

    # One's own stream: said next to the field.
    publisher.get_by_role("link", name="Subscriptions").click()
    publisher.get_by_label("Stream code").fill(code)
    publisher.get_by_role("button", name="Subscribe", exact=True).click()
    expect(publisher.get_by_text("This is your own stream")).to_be_visible()
    assert not problems(reader)
