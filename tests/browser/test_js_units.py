"""The app's pure JavaScript (js/format.js, js/sse.js, js/state.js) under unit tests, in
the Chromium the browser suite drives: tests/browser/js/units.js, served at a path of
the app's own origin (so the page's policy lets it import the modules), one pytest case
per test() in it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Route

from tests.browser.conftest import AppServer, watched

UNITS = Path(__file__).with_name("js") / "units.js"
NAMES = re.findall(r'^test\("([^"]+)"', UNITS.read_text(encoding="utf-8"), re.MULTILINE)
# Under /app/ like the modules, so that `script-src 'self'` lets the page import it.
SERVED_AT = "/app/js/__units__.js"


@pytest.fixture(scope="module")
def results(browser: Browser, server: AppServer) -> Iterator[dict[str, str | None]]:
    """Every test() of units.js run once in a page of the app: name -> error (or None)."""
    # No service worker: requests it made would pass by the page's route to the server.
    context = browser.new_context(base_url=server.base, service_workers="block")
    page = watched(context.new_page())

    def serve(route: Route) -> None:
        route.fulfill(body=UNITS.read_text(encoding="utf-8"), content_type="text/javascript")

    page.route(f"**{SERVED_AT}", serve)
    page.goto("/app/")
    page.get_by_role("button", name="Sign in").wait_for()
    ran: list[dict[str, str | None]] = page.evaluate(
        "async (url) => (await import(url)).run()", SERVED_AT
    )
    yield {str(r["name"]): r["error"] for r in ran}
    context.close()


def test_every_unit_test_ran(results: dict[str, str | None]) -> None:
    assert sorted(results) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_js(results: dict[str, str | None], name: str) -> None:
    error = results[name]
    assert error is None, error
