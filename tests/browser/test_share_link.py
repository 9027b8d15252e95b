"""With PUSHCORE_PUBLIC_URL set, the share link the app shows is the public one (API.md)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, expect

from tests.browser.conftest import SERVER_ENV, AppServer, sign_in

PUBLIC = "http://push.example:8443/base"


@pytest.fixture(scope="module")
def public_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AppServer]:
    """A server people reach at PUBLIC, opened here at its loopback address."""
    running = AppServer(
        tmp_path_factory.mktemp("public"), env=SERVER_ENV | {"PUSHCORE_PUBLIC_URL": PUBLIC}
    )
    running.start()
    yield running
    running.stop()


def test_the_share_link_is_the_public_urls_whatever_host_the_page_came_from(
    browser: Browser, public_server: AppServer
) -> None:
    context = browser.new_context(base_url=public_server.base)
    context.set_default_timeout(10_000)
    try:
        page = context.new_page()
        sign_in(page, public_server.person("pub"))
        page.get_by_role("navigation", name="Main").get_by_role("link", name="Streams").click()
        page.get_by_role("button", name="New stream").click()
        page.get_by_label("Name").fill("Harbour news")
        page.get_by_role("button", name="Create stream").click()
        card = page.get_by_role("region", name="Harbour news")
        code = card.locator("code").inner_text()
        link = card.get_by_role("link", name=f"{PUBLIC}/app/subscribe/{code}")
        expect(link).to_have_attribute("href", f"{PUBLIC}/app/subscribe/{code}")
    finally:
        context.close()
