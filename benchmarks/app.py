"""The app's first load and its Lighthouse scores on the inbox screen (docs/benchmarks.md).

    .venv/bin/python -m benchmarks.app --lighthouse /tmp/lh/node_modules/.bin/lighthouse \
        [--entries 200] [--runs 3]

Starts `pushctl serve` (sign-up on) on loopback and Debian's Chromium with a
DevTools port, signs a new account up through the app with Playwright (so the
browser holds the session cookie) with ``--entries`` entries in its inbox, then:

- the first load: the bytes of every response of a fresh visit to /app/ as
  sent (gzipped where the server compresses), from the DevTools protocol;
- installability: Chrome's own verdict (``Page.getInstallabilityErrors``);
- Lighthouse (not a dependency of the project: install it in a temporary
  directory, ``npm i -E lighthouse@12.2.3``) on /app/, the inbox, with its
  default mobile emulation, keeping the browser's storage (the session).

``--runs`` repeats the whole measurement on a fresh server and browser each time.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from playwright.sync_api import sync_playwright

from tests.browser.conftest import ARGS, CHROMIUM, PASSWORD, SERVER_ENV, AppServer

DEVTOOLS_PORT = 9333


def first_load(base: str) -> tuple[int, int]:
    """(requests, bytes on the wire) of a first visit to /app/ in a fresh profile."""
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        page = browser.new_page()
        cdp = page.context.new_cdp_session(page)
        cdp.send("Network.enable")
        sizes: dict[str, int] = {}
        cdp.on(
            "Network.loadingFinished",
            lambda e: sizes.__setitem__(e["requestId"], int(e["encodedDataLength"])),
        )
        page.goto(f"{base}/app/", wait_until="networkidle")
        page.wait_for_timeout(1000)
        browser.close()
    return len(sizes), sum(sizes.values())


def main() -> None:
    """Measure and print a JSON summary."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--lighthouse", help="path to the lighthouse CLI")
    parser.add_argument("--entries", type=int, default=200, help="inbox entries")
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    runs = [one_run(args.lighthouse, args.entries) for _ in range(args.runs)]
    json.dump({"entries": args.entries, "runs": runs}, sys.stdout, indent=2)
    print()


def one_run(lighthouse: str | None, entries: int) -> dict[str, Any]:
    """One server and browser: the first load, installability and Lighthouse's scores."""
    with tempfile.TemporaryDirectory() as tmp:
        server = AppServer(Path(tmp) / "data", env=SERVER_ENV | {"PUSHCORE_RATE_LIMIT": "0"})
        server.start()
        try:
            result: dict[str, Any] = {}
            requests, size = first_load(server.base)
            result["firstLoad"] = {"requests": requests, "bytes": size}
            chromium = subprocess.Popen(
                [
                    str(CHROMIUM),
                    *ARGS,
                    f"--remote-debugging-port={DEVTOOLS_PORT}",
                    f"--user-data-dir={tmp}/profile",
                    "about:blank",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            try:
                result.update(_signed_in_checks(server, lighthouse, Path(tmp), entries))
            finally:
                chromium.terminate()
                chromium.wait(10)
        finally:
            server.stop()
    return result


def _signed_in_checks(
    server: AppServer, lighthouse: str | None, tmp: Path, entries: int
) -> dict[str, Any]:
    account = server.person("lh")
    news = server.stream("Morning news", account)
    for n in range(entries):
        # A high-priority entry now and then, as a real inbox has.
        news.send(
            f"Headline {n}", "A short body for the inbox.", "high" if n % 7 == 0 else "normal"
        )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{DEVTOOLS_PORT}/json/version", timeout=0.5)
            break
        except httpx.HTTPError:
            time.sleep(0.1)
    found: dict[str, Any] = {}
    with sync_playwright() as driver:
        browser = driver.chromium.connect_over_cdp(f"http://127.0.0.1:{DEVTOOLS_PORT}")
        page = browser.contexts[0].new_page()
        page.goto(f"{server.base}/app/")
        page.get_by_label("Account").fill(account)
        page.get_by_label("Password", exact=True).fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        page.get_by_role("heading", name="Inbox").wait_for()
        page.wait_for_timeout(1000)
        cdp = page.context.new_cdp_session(page)
        errors = cdp.send("Page.getInstallabilityErrors")["installabilityErrors"]
        found["installable"] = not errors
        found["installabilityErrors"] = errors
        page.close()
    if lighthouse:
        report = tmp / "lighthouse.json"
        subprocess.run(
            [
                lighthouse,
                f"{server.base}/app/",
                f"--port={DEVTOOLS_PORT}",
                "--disable-storage-reset",
                "--only-categories=performance,accessibility,best-practices",
                "--output=json",
                f"--output-path={report}",
                "--quiet",
            ],
            check=True,
        )
        data = json.loads(report.read_text())
        if keep := os.environ.get("PUSHCORE_BENCH_KEEP_REPORT"):
            Path(keep).write_text(report.read_text())
        found["lighthouse"] = {
            name: round(category["score"] * 100) for name, category in data["categories"].items()
        }
        found["metrics"] = {
            name: round(data["audits"][name]["numericValue"], 3)
            for name in (
                "first-contentful-paint",
                "largest-contentful-paint",
                "total-blocking-time",
                "cumulative-layout-shift",
                "speed-index",
            )
        }
        found["opportunities"] = {
            audit["id"]: audit.get("displayValue", "")
            for audit in data["audits"].values()
            if audit.get("score") is not None
            and audit["score"] < 0.9
            and audit.get("scoreDisplayMode") in ("metricSavings", "numeric")
        }
        # Which screen was measured: the largest element painted (an inbox entry when
        # the session held, the sign-in form if it did not).
        found["largestElement"] = [
            m.group(0)[:120]
            for m in re.finditer(r'"snippet": ?"[^"]*"', json.dumps(data["audits"]))
        ][:3]
        found["lighthouseFailed"] = [
            audit["id"]
            for audit in data["audits"].values()
            if audit.get("score") is not None
            and audit["score"] < 1
            and audit.get("scoreDisplayMode") == "binary"
        ]
    return found


if __name__ == "__main__":
    main()
