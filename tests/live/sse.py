"""A small server-sent events client for the tests: follows a live channel on a thread."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import httpx


@attrs.frozen
class Event:
    """One event as received (``data`` decoded from JSON), and when (wall-clock seconds)."""

    event: str
    data: Any
    id: str | None
    at: float


class Listener:
    """Reads ``url``'s event stream on a thread until it ends or :meth:`close`."""

    def __init__(
        self,
        url: str,
        headers: Mapping[str, str],
        timeout: float = 30.0,
        client: httpx.Client | None = None,
    ) -> None:
        """``client``: one whose open connection the stream must use (a given server
        process of several on one port); a new one by default."""
        self.url = url
        self.headers = dict(headers)
        self.events: list[Event] = []
        self.lines: list[str] = []  # every line as received, blank ones included
        self.status: int | None = None
        self.ended = threading.Event()
        self.opened = threading.Event()
        self._stop = threading.Event()
        self._client = client or httpx.Client(timeout=httpx.Timeout(timeout, read=timeout))
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        fields: dict[str, str] = {}
        try:
            with self._client.stream("GET", self.url, headers=self.headers) as response:
                self.status = response.status_code
                self.opened.set()
                if response.status_code != 200:
                    response.read()
                    return
                for line in response.iter_lines():
                    if self._stop.is_set():
                        return
                    self.lines.append(line)
                    if line == "":
                        if "event" in fields:
                            data = json.loads(fields.get("data", "null"))
                            self.events.append(
                                Event(fields["event"], data, fields.get("id"), time.time())
                            )
                        fields = {}
                    elif not line.startswith(":"):
                        name, _, value = line.partition(": ")
                        fields[name] = value
        except httpx.HTTPError:
            pass  # the server went away (killed) or we closed
        finally:
            self.opened.set()
            self.ended.set()

    def wait_for(self, condition: Callable[[list[Event]], bool], timeout: float = 10.0) -> bool:
        """Whether ``condition`` of the events received holds within ``timeout``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition(list(self.events)):
                return True
            time.sleep(0.02)
        return condition(list(self.events))

    def notifications(self) -> list[Event]:
        """The ``notification`` events received."""
        return [e for e in self.events if e.event == "notification"]

    def close(self) -> None:
        """Stop reading (the connection is closed)."""
        self._stop.set()
        self._client.close()
        self._thread.join(5)


def titles(listener: Listener) -> list[str]:
    """The titles of the notifications a listener received, in order."""
    return [e.data["title"] for e in listener.notifications()]
