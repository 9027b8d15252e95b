"""The app when its session ends elsewhere: a password change signs every session out,
and an open app asks for the (new) password within seconds (API.md, "People-side
limits"); the app's own password change keeps it signed in."""

from __future__ import annotations

import httpx
from playwright.sync_api import Page, expect

from tests.browser.conftest import PASSWORD, AppServer, problems, sign_in


def test_a_password_change_elsewhere_brings_the_open_app_to_sign_in(
    page: Page, server: AppServer
) -> None:
    account = server.person()
    sign_in(page, account)
    expect(page.get_by_role("heading", name="Inbox")).to_be_visible()
    changed = httpx.post(
        f"{server.base}/api/auth/password",
        json={"currentPassword": PASSWORD, "newPassword": "changed on another device"},
        headers=server.bearer(account),
    )
    assert changed.status_code == 200
    # Its live channel ends, its refresh is refused: the sign-in form, nothing else.
    expect(page.get_by_role("button", name="Sign in")).to_be_visible(timeout=10_000)
    expect(page.get_by_role("navigation", name="Main")).to_have_count(0)
    page.get_by_label("Account").fill(account)
    page.get_by_label("Password", exact=True).fill("changed on another device")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("navigation", name="Main")).to_be_visible()
    assert not problems(page)


def test_the_app_s_own_password_change_keeps_it_signed_in(page: Page, server: AppServer) -> None:
    account = server.person()
    sign_in(page, account)
    page.get_by_role("link", name="Settings").click()
    page.get_by_label("Current password").fill(PASSWORD)
    page.get_by_label("New password").fill("a brand new password")
    page.get_by_role("button", name="Change password").click()
    expect(page.get_by_text("Password changed.")).to_be_visible()
    # Past the moment its old session's channel ends (within 1 s), still signed in.
    page.wait_for_timeout(2000)
    expect(page.get_by_role("heading", name="Settings")).to_be_visible()
    expect(page.get_by_role("button", name="Sign in")).to_have_count(0)
    page.get_by_role("link", name="Inbox").click()
    expect(page.get_by_role("heading", name="Inbox")).to_be_visible()
    assert not problems(page)
