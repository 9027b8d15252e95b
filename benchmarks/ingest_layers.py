"""The front door's per-layer budget: CPU µs per request of each layer, in process.

    .venv/bin/python -m benchmarks.ingest_layers [--requests 20000] [--tree DIR]...

One app (as `pushctl serve` makes it, on SQLite, rate limiting off, no engine)
is called as uvicorn calls it (an ASGI scope, ``receive`` and ``send``; no
sockets, no HTTP parsing), with its middleware stack built up one layer at a
time, from the router alone to the whole app: each layer's cost is what adding
it adds to the process's CPU time per request (all threads: for a create, the
group writer's transaction too). ``GET /healthz`` one request at a time;
``POST /api/notifications`` (the ingest benchmark's body, with an
``X-API-Key``) from 32 tasks at once, so that the group writer commits them in
groups as it does under wrk. ``--tree DIR`` measures the pushcore of another
source tree too (e.g. ``git archive 3764ec9 | tar -x -C DIR``), in a process of
its own, round by round with this one. What it leaves out (the socket, HTTP
parsing, uvicorn's task per request) is the rest of what ``benchmarks.ingest``
measures: compare the two.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

ITEM = {"title": "Deploy finished", "body": "build 1234 is live", "delay": "1h"}
TASKS = 32
Send = Callable[[dict[str, Any]], Awaitable[None]]


def scope_of(method: str, path: str, headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    """An HTTP scope as uvicorn's httptools protocol makes it."""
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 50000),
        "scheme": "http",
        "method": method,
        "root_path": "",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1:8000"), (b"user-agent", b"wrk"), *headers],
        "state": {},
    }


def stacks(app: Any) -> list[tuple[str, Any]]:
    """The app's stack built up from the inside: (the layer added, the ASGI app so far)."""
    from starlette.middleware.errors import ServerErrorMiddleware
    from starlette.middleware.exceptions import ExceptionMiddleware

    handlers = {k: v for k, v in app.exception_handlers.items() if k not in (500, Exception)}
    inner: Any = ExceptionMiddleware(app.router, handlers=handlers)
    built = [("routing, the endpoint and its answer (Starlette's exception layer)", inner)]
    for middleware in reversed(app.user_middleware):
        cls, args, kwargs = middleware
        inner = cls(inner, *args, **kwargs)
        built.append((cls.__name__, inner))
    built.append(("ServerErrorMiddleware", ServerErrorMiddleware(inner)))
    return built


async def cpu_per_request(call: Callable[[], Awaitable[None]], requests: int, tasks: int) -> float:
    """Process CPU µs per ``call()``, ``tasks`` at a time."""

    async def worker(n: int) -> None:
        for _ in range(n):
            await call()

    await asyncio.gather(*(worker(max(1, requests // tasks // 10)) for _ in range(tasks)))
    each = requests // tasks
    start = time.process_time()
    await asyncio.gather(*(worker(each) for _ in range(tasks)))
    return (time.process_time() - start) / (each * tasks) * 1e6


async def measure(requests: int) -> dict[str, dict[str, float]]:
    """µs per request of each stack, for /healthz and for a create."""
    import httpx

    from pushcore import build_services, load_settings
    from pushcore_http import create_app

    data_dir = Path(tempfile.mkdtemp())
    settings = load_settings(
        env={"PUSHCORE_RATE_LIMIT": "0", "PUSHCORE_ALLOW_PRIVATE_NETWORKS": "true"},
        data_dir=data_dir,
    )
    app = create_app(build_services(settings), run_engine=False)
    body = json.dumps(ITEM).encode()
    async with app.router.lifespan_context(app):
        key = await _api_key(app, data_dir, httpx)
        post_headers = [
            (b"x-api-key", key.encode()),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ]
        statuses: dict[int, int] = {}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                statuses[message["status"]] = statuses.get(message["status"], 0) + 1

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": body, "more_body": False}

        out: dict[str, dict[str, float]] = {"healthz": {}, "create": {}}
        for name, stack in stacks(app):

            async def health(stack: Any = stack) -> None:
                await stack({**scope_of("GET", "/healthz", []), "app": app}, receive, send)

            async def create(stack: Any = stack) -> None:
                scope = scope_of("POST", "/api/notifications", post_headers)
                await stack({**scope, "app": app}, receive, send)

            out["healthz"][name] = await cpu_per_request(health, requests, 1)
            try:
                out["create"][name] = await cpu_per_request(create, requests // 10, TASKS)
            except RuntimeError:  # a tree whose creates need a layer further out: counted there
                continue
        if set(statuses) != {200, 201}:
            raise RuntimeError(f"answers other than 200 and 201: {statuses}")
    return out


async def _api_key(app: Any, data_dir: Path, httpx: Any) -> str:
    """An API key of an account with one webhook device (as benchmarks.ingest prepares)."""
    from pushcore.bootstrap import ensure_jwt_secret
    from pushcore.services.tokens import TokenIssuer

    try:
        from pushcore.runtime.system import SystemClock
    except ImportError:  # a tree from before the package was renamed
        from pushcore.adapters.system import SystemClock  # type: ignore[no-redef,import-not-found,unused-ignore]

    issuer = TokenIssuer(SystemClock(), ensure_jwt_secret(data_dir))
    token = issuer.issue("bench", timedelta(hours=1))
    bearer = {"Authorization": f"Bearer {token}"}
    transport = httpx.ASGITransport(app)
    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
        device = {"token": "http://127.0.0.1:9/hook", "platform": "webhook"}
        (await client.post("/api/devices", json=device, headers=bearer)).raise_for_status()
        scopes = ["notifications:write", "notifications:read"]
        answer = await client.post(
            "/api/keys", json={"name": "k", "scopes": scopes}, headers=bearer
        )
        answer.raise_for_status()
        return str(answer.json()["key"])


def budget(figures: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """Each layer's own µs (what it adds to the stack inside it), and the total."""
    own: dict[str, dict[str, float]] = {}
    for path, cumulative in figures.items():
        before = 0.0
        own[path] = {}
        for name, total in cumulative.items():
            own[path][name] = total - before
            before = total
        own[path]["in the app, in all"] = before
    return own


def main() -> None:
    """Measure this tree (and each --tree, in a process of its own), print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--tree", type=Path, action="append", default=[])
    parser.add_argument("--json", action="store_true", help="print the figures as JSON only")
    args = parser.parse_args()
    if args.json:
        print(json.dumps(asyncio.run(measure(args.requests))))
        return
    trees: dict[str, Path | None] = {str(t): t for t in args.tree} | {"this tree": None}
    runs: dict[str, list[dict[str, dict[str, float]]]] = {name: [] for name in trees}
    for _ in range(args.rounds):
        for name, tree in trees.items():
            command = [sys.executable, "-m", "benchmarks.ingest_layers", "--json"]
            command += ["--requests", str(args.requests)]
            env_tree = str(tree.resolve()) if tree is not None else None
            done = subprocess.run(
                command
                if env_tree is None
                else [sys.executable, "-c", _RUN_IN, env_tree, str(args.requests)],
                capture_output=True,
                text=True,
                check=True,
            )
            runs[name].append(budget(json.loads(done.stdout.strip().splitlines()[-1])))
    print(table(runs))


# Runs this module's measure() with another tree first on sys.path.
_RUN_IN = (
    "import sys, json, asyncio, runpy; sys.path.insert(0, sys.argv[1]);"
    f"m = runpy.run_path({__file__!r});"
    "print(json.dumps(asyncio.run(m['measure'](int(sys.argv[2])))))"
)


def table(runs: dict[str, list[dict[str, dict[str, float]]]]) -> str:
    """A markdown table: a row per layer and path, a column per tree (medians)."""
    import statistics

    names = list(runs)
    lines = [
        "| request | layer | " + " | ".join(f"µs, {n}" for n in names) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    first = runs[names[0]][0]
    for path, layers in first.items():
        every = list(dict.fromkeys([*layers, *(k for n in names for k in runs[n][0][path])]))
        for layer in every:
            cells = []
            for n in names:
                values = [r[path][layer] for r in runs[n] if layer in r[path]]
                cells.append(f"{statistics.median(values):,.1f}" if values else "-")
            lines.append(f"| {path} | {layer} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
