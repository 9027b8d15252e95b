"""The app's inbox with many entries: what it loads, and how soon a live entry shows.

    .venv/bin/python -m benchmarks.app_inbox [--entries 10000] [--live 30] [--runs 3]

Starts `pushctl serve` (sign-up on, rate limiting off) on loopback, gives a new
account ``--entries`` inbox entries (stream sends from 8 threads), opens the app in
Debian's Chromium signed in, and measures:

- what the open inbox holds: entries in the page and inbox pages fetched, after
  opening and after scrolling to the end of what is loaded five times;
- live render time: for each of ``--live`` sends, one at a time, from the moment
  the browser's fetch stream hands the app the event's bytes to the moment the
  entry is in the page (a MutationObserver), in ms. The stream is observed by a
  pass-through TransformStream the benchmark wraps around the app's own fetch of
  /api/inbox/events (injected by the benchmark only; the app is unchanged).

Target (issue 31): the inbox does not load every entry, and a live entry renders
within 50 ms of its event. Printed as JSON; docs/benchmarks.md quotes the runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import Page, sync_playwright

from tests.browser.conftest import ARGS, CHROMIUM, PASSWORD, SERVER_ENV, AppServer, Publication

# Wraps the body of the live channel's response: each chunk's arrival time is kept
# under every entry id it carries, before the app's reader sees it.
WATCH = """
(() => {
  window.__arrived = {};
  window.__shown = {};
  const original = window.fetch.bind(window);
  window.fetch = async (input, init) => {
    const response = await original(input, init);
    const url = typeof input === "string" ? input : input.url;
    if (!url.includes("/api/inbox/events") || !response.body) return response;
    const decoder = new TextDecoder();
    const watch = new TransformStream({
      transform(chunk, controller) {
        const at = performance.now();
        const text = decoder.decode(chunk, { stream: true });
        for (const m of text.matchAll(/"title":"(live-[0-9]+)"/g)) window.__arrived[m[1]] = at;
        controller.enqueue(chunk);
      },
    });
    return new Response(response.body.pipeThrough(watch), {
      status: response.status, statusText: response.statusText, headers: response.headers,
    });
  };
  new MutationObserver((changes) => {
    const at = performance.now();
    for (const change of changes) {
      for (const node of change.addedNodes) {
        const text = node.textContent || "";
        const m = text.match(/live-[0-9]+/);
        if (m && !(m[0] in window.__shown)) window.__shown[m[0]] = at;
      }
    }
  }).observe(document, { childList: true, subtree: true });
})();
"""


def fill(publication: Publication, entries: int) -> float:
    """``entries`` stream sends from 8 threads; seconds taken."""
    start = time.monotonic()
    with httpx.Client(timeout=30) as http, ThreadPoolExecutor(8) as pool:

        def send(i: int) -> None:
            answer = http.post(
                f"{publication.base}/api/streams/{publication.id}/send",
                json={"title": f"Entry {i}", "body": "Something that happened."},
                headers={"X-API-Key": publication.key},
            )
            assert answer.status_code == 201, answer.text

        list(pool.map(send, range(entries)))
    return time.monotonic() - start


def held(page: Page) -> int:
    """Entries in the inbox's list now."""
    return int(page.locator('ul[aria-label="Notifications"] > li').count())


def one_run(entries: int, live: int) -> dict[str, Any]:
    """One server, one account, one browser: the figures of one run."""
    with tempfile.TemporaryDirectory() as tmp:
        server = AppServer(Path(tmp) / "data", env=SERVER_ENV | {"PUSHCORE_RATE_LIMIT": "0"})
        server.start()
        try:
            account = server.person("big")
            stream = server.stream("Busy stream", account)
            filled = fill(stream, entries)
            with sync_playwright() as driver:
                browser = driver.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
                page = browser.new_page(viewport={"width": 360, "height": 740})
                page.add_init_script(WATCH)
                pages: list[str] = []
                page.on(
                    "request",
                    lambda r: pages.append(r.url) if "/api/inbox?" in r.url else None,
                )
                page.goto(f"{server.base}/app/")
                page.get_by_label("Account").fill(account)
                page.get_by_label("Password", exact=True).fill(PASSWORD)
                page.get_by_role("button", name="Sign in").click()
                page.get_by_text(f"Entry {entries - 1}", exact=True).wait_for()
                page.wait_for_timeout(500)
                opened = {"entries": held(page), "pages": len(pages)}
                for _ in range(5):
                    page.mouse.wheel(0, 100_000)
                    page.wait_for_timeout(400)
                scrolled = {"entries": held(page), "pages": len(pages)}
                page.mouse.wheel(0, -1_000_000)
                # Live: one send at a time, each seen in the page before the next.
                times: list[float] = []
                for i in range(live):
                    title = f"live-{i}"
                    stream.send(title)
                    page.get_by_text(title, exact=True).wait_for()
                    arrived, shown = page.evaluate(
                        "t => [window.__arrived[t], window.__shown[t]]", title
                    )
                    times.append(shown - arrived)
                browser.close()
        finally:
            server.stop()
    return {
        "filledSeconds": round(filled, 1),
        "opened": opened,
        "afterScrolling": scrolled,
        "liveRenderMs": {
            "median": round(statistics.median(times), 1),
            "p95": round(sorted(times)[max(0, round(len(times) * 0.95) - 1)], 1),
            "max": round(max(times), 1),
            "count": len(times),
        },
    }


def main() -> None:
    """Measure and print a JSON summary of every run."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--live", type=int, default=30)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    runs = [one_run(args.entries, args.live) for _ in range(args.runs)]
    json.dump({"entries": args.entries, "runs": runs}, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
