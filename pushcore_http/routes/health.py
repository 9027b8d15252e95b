"""Liveness and readiness."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from concurrent.futures import Future

from starlette.requests import Request
from starlette.responses import Response

from pushcore.ports import Store
from pushcore_http.answers import Json, answer, ref
from pushcore_http.auth import PUBLIC
from pushcore_http.endpoints import Endpoints
from pushcore_http.rendering import JSONResponse

log = logging.getLogger("pushcore.http")


def _closed(properties: Json, *required: str) -> Json:
    closed = {"type": "object", "properties": properties, "additionalProperties": False}
    return closed | {"required": list(required or properties)}


_CHECKS = {
    "database": {"type": "string", "enum": ["ok", "down"]},
    "scheduler": {"type": "string", "enum": ["running", "stopped"]}
    | {"description": "Absent in an API-only process (no scheduler)."},
}
_READY = {"type": "string", "enum": ["ready", "unavailable"]}
# Made here, not from views.
routes = Endpoints(
    "Operations",
    {
        "Health": _closed({"status": {"const": "ok"}}),
        "Readiness": _closed({"status": _READY, "checks": _closed(_CHECKS, "database")}),
    },
)

# /readyz answers within 1 s (API.md) whatever the database does: the probe
# gets this long, the rest is for the answer itself on a busy machine.
PROBE_DEADLINE_SECONDS = 0.8


class DatabaseProbe:
    """Whether the database can be read and written, told within a deadline.

    The store's ping writes one row and can take as long as the store's
    bounds allow (seconds, on a locked or frozen database), so it runs on a
    thread of its own and the answer waits for it only until the deadline:
    past that, not ready. A ping still running from an earlier call is
    waited for again, not started anew, so a database that does not answer
    costs one thread, not one per poll. Not the shared thread pool either:
    under load, readiness must not queue behind requests.
    """

    def __init__(self, store: Store, deadline: float = PROBE_DEADLINE_SECONDS) -> None:
        self._store = store
        self._deadline = deadline
        self._lock = threading.Lock()
        self._running: Future[None] | None = None

    def _start(self) -> Future[None]:
        with self._lock:
            running = self._running
            if running is None or running.done():
                running = self._running = Future()
                # Running from now on: a caller's timeout cannot cancel it, so it
                # stays the one ping in flight until it ends.
                running.set_running_or_notify_cancel()
                threading.Thread(
                    target=self._ping, args=(running,), name="pushcore-readyz", daemon=True
                ).start()
            return running

    def _ping(self, future: Future[None]) -> None:
        try:
            self._store.ping()
        except BaseException as exc:  # handed to whoever waits; not raised in this thread
            future.set_exception(exc)
        else:
            future.set_result(None)

    async def ok(self) -> bool:
        """True when a ping (this call's, or one already running) succeeds within the deadline."""
        try:
            await asyncio.wait_for(asyncio.wrap_future(self._start()), self._deadline)
        except TimeoutError:
            log.debug("readiness: the database did not answer within %g s", self._deadline)
            return False
        except Exception as exc:  # any failure to read or write means not ready
            log.debug("readiness: the database failed: %s", exc)
            return False
        return True

    async def finish(self, timeout: float) -> None:
        """Wait (up to ``timeout``) for a ping still running: before the store closes, as
        closing connections a thread still uses is not safe."""
        running = self._running
        if running is not None and not running.done():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.wrap_future(running), timeout)


@routes.get(
    "/healthz",
    "Liveness",
    PUBLIC,
    answer(200, "Alive.", ref("Health")),
    "200 while the process answers.",
)
async def healthz(_request: Request) -> Response:
    """GET /healthz: the process answers."""
    return JSONResponse({"status": "ok"})


@routes.get(
    "/readyz",
    "Readiness",
    PUBLIC,
    answer(200, "Ready.", ref("Readiness")) | answer(503, "Not ready.", ref("Readiness")),
    "200 when the database answers and the scheduler runs (if this process runs one), "
    "else 503 naming the failed check.",
)
async def readyz(request: Request) -> Response:
    """GET /readyz: 200 when the database takes a write and the scheduler runs, 503 otherwise;
    within a second in every state."""
    probe: DatabaseProbe = request.app.state.readiness
    checks = {"database": "ok" if await probe.ok() else "down"}
    engine = request.app.state.engine
    if engine is not None:
        checks["scheduler"] = (
            "stopped" if not engine.running else "stuck" if engine.stuck() else "running"
        )
    ready = checks["database"] == "ok" and checks.get("scheduler", "running") == "running"
    return JSONResponse(
        {"status": "ready" if ready else "unavailable", "checks": checks}, 200 if ready else 503
    )
