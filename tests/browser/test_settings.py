"""Settings: an API key created, shown once, working over the API, then revoked; password."""

from __future__ import annotations

import re

import httpx
from playwright.sync_api import BrowserContext, Page, expect

from tests.browser.conftest import PASSWORD, AppServer, axe_scan, problems, sign_in


def test_create_use_and_revoke_a_key(
    context: BrowserContext, page: Page, server: AppServer
) -> None:
    account = server.person()
    sign_in(page, account)
    page.get_by_role("link", name="Settings").click()
    expect(page.get_by_role("heading", name="Settings")).to_be_visible()
    assert not axe_scan(page)

    # Errors beside the fields they concern.
    page.get_by_role("button", name="Create key").click()
    expect(page.get_by_text("Give the key a name")).to_be_visible()
    expect(page.get_by_text("Choose at least one scope")).to_be_visible()

    page.get_by_label("Name", exact=True).fill("CI deploys")
    page.get_by_label("notifications:read").check()
    page.get_by_label("notifications:write").check()
    page.get_by_role("button", name="Create key").click()
    shown = page.locator(".key")
    expect(shown).to_have_text(re.compile(r"^psk_[0-9A-Za-z]{38}$"))
    key = shown.inner_text()
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.get_by_role("button", name="Copy", exact=True).click()
    assert page.evaluate("() => navigator.clipboard.readText()") == key

    listed = page.get_by_role("listitem").filter(has_text="CI deploys")
    expect(listed).to_contain_text(key[:12])
    expect(listed).to_contain_text("notifications:read, notifications:write")
    expect(listed).to_contain_text("Last used never")

    # The key works over the API...
    answer = httpx.get(f"{server.base}/api/notifications", headers={"X-API-Key": key})
    assert answer.status_code == 200, answer.text
    # ...until revoked here.
    listed.get_by_role("button", name="Revoke").click()
    # Folded away with the other keys that no longer work.
    folded = page.get_by_text("Revoked and expired keys (1)")
    folded.click()
    revoked = page.locator(".gone").get_by_role("listitem").filter(has_text="CI deploys")
    expect(revoked).to_contain_text("(revoked)")
    answer = httpx.get(f"{server.base}/api/notifications", headers={"X-API-Key": key})
    assert answer.status_code == 401
    assert answer.json()["error"] == "API key revoked"

    # An expiry, and a device removed.
    page.get_by_label("Name", exact=True).fill("Until 2099")
    page.get_by_label("devices:read").check()
    page.get_by_label("Expires").fill("2099-01-02T03:04")
    page.get_by_role("button", name="Create key").click()
    expect(page.get_by_role("listitem").filter(has_text="Until 2099")).to_contain_text("expires")
    open_app = page.get_by_role("list", name="Devices").get_by_role("listitem")
    expect(open_app).to_contain_text("(this browser)")
    open_app.get_by_role("button", name="Remove").click()
    expect(page.get_by_text("No device.")).to_be_visible()

    # Shown once: not after a reload.
    page.reload()
    expect(page.get_by_text(key)).to_have_count(0)
    assert not problems(page)


def test_change_password_keeps_this_session(page: Page, server: AppServer) -> None:
    account = server.person()
    sign_in(page, account)
    page.get_by_role("link", name="Settings").click()
    page.get_by_label("Current password").fill("not the password")
    page.get_by_label("New password").fill("a brand new password")
    page.get_by_role("button", name="Change password").click()
    expect(page.get_by_label("Current password")).to_have_attribute("aria-invalid", "true")
    page.get_by_label("Current password").fill(PASSWORD)
    page.get_by_role("button", name="Change password").click()
    expect(page.get_by_text("Password changed.")).to_be_visible()
    page.reload()
    expect(page.get_by_role("heading", name="Settings")).to_be_visible()
    login = httpx.post(
        f"{server.base}/api/auth/login",
        json={"account": account, "password": "a brand new password"},
    )
    assert login.status_code == 200
