"""An in-process server (uvicorn on a thread) over real services, for the live channel."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
import uvicorn

from pushcore import Services, build_services, load_settings
from pushcore.domain.inputs import NewApiKey, NewNotification
from pushcore.domain.model import Notification
from pushcore.domain.scopes import Scope
from pushcore.live import LiveLimits
from pushcore_http.app import create_app
from tests.live.sse import Listener


class LiveServer:
    """`create_app` with its engine, served on a loopback port."""

    def __init__(self, services: Services) -> None:
        self.services = services
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.base = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(
            create_app(services), host="127.0.0.1", port=self.port, log_level="warning"
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.listeners: list[Listener] = []

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        assert self.server.started

    def stop(self) -> None:
        for listener in self.listeners:
            listener.close()
        self.server.should_exit = True
        self.thread.join(15)

    def user(self, account: str, ttl: timedelta = timedelta(hours=1)) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.services.tokens.issue(account, ttl)}"}

    def key(self, account: str, *scopes: Scope) -> tuple[str, dict[str, str]]:
        """A new API key (its id, and its header)."""
        created = self.services.keys.create(
            account, NewApiKey(name="t", scopes=scopes or (Scope.NOTIFICATIONS_READ,))
        )
        return created.key.id, {"X-API-Key": created.secret}

    def listen(self, headers: dict[str, str], query: str = "") -> Listener:
        listener = Listener(f"{self.base}/api/inbox/events{query}", headers)
        self.listeners.append(listener)
        assert listener.opened.wait(10)
        return listener

    def request(self, method: str, path: str, **kwargs: object) -> httpx.Response:
        return httpx.request(method, f"{self.base}{path}", timeout=10.0, **kwargs)  # type: ignore[arg-type]

    def notify(self, account: str, title: str) -> Notification:
        """A notification due now (the engine takes it up at once)."""
        request = NewNotification(title=title, scheduled_at=datetime.now(UTC))
        return asyncio.run(self.services.notifications.create(account, request))


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveServer]:
    settings = load_settings(env={"PUSHCORE_RATE_LIMIT": "0"}, data_dir=tmp_path)
    services = build_services(settings)
    # Quick enough for tests; the defaults are API.md's.
    services.live.limits = LiveLimits(keepalive=0.3, key_check=0.2)
    server = LiveServer(services)
    server.start()
    try:
        yield server
    finally:
        server.stop()
