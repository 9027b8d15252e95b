"""Following the live channel (GET /api/inbox/events): parsing, resuming, backing off.

The stream is read line by line (the WHATWG event-stream format); each event
becomes the view its data is (an inbox entry, a read, a dismissal). A stream
that ends or breaks is opened again after a backoff, with ``Last-Event-ID``
set to the last entry seen, so no entry is lost or repeated; an error answer
other than 429 and 503 (a 401 once the credential expired) is raised.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable

import attrs
import httpx

from pushcore.client._call import Auth, Call
from pushcore.client._errors import error_for, retry_after
from pushcore.converter import DismissedEventView, InboxEntryView, ReadEventView, from_json

LiveEvent = InboxEntryView | ReadEventView | DismissedEventView
_VIEWS: dict[str, type[LiveEvent]] = {
    "notification": InboxEntryView,
    "read": ReadEventView,
    "dismissed": DismissedEventView,
}
CHANNEL = Call("GET", "/api/inbox/events", Auth.EITHER, lambda data: data)


class EventParser:
    """Turns the lines of an event stream into views (None until an event is complete)."""

    def __init__(self) -> None:
        self._name: str | None = None
        self._data: list[str] = []

    def feed(self, line: str) -> LiveEvent | None:
        """Take one line (without its end); the event it completes, if any."""
        if line == "":
            name, data = self._name, "\n".join(self._data)
            self._name, self._data = None, []
            view = _VIEWS.get(name or "")
            return None if view is None or not data else from_json(json.loads(data), view)
        if line.startswith(":"):
            return None  # a comment: the keep-alive
        field, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if field == "event":
            self._name = value
        elif field == "data":
            self._data.append(value)
        return None


@attrs.define
class Resume:
    """Where a followed channel stands: the last entry seen, and the next wait."""

    since: str | None
    backoff: float = 0.5
    max_backoff: float = 8.0
    jitter: Callable[[], float] = random.random
    _failures: int = 0

    def headers(self) -> dict[str, str]:
        """Ask for the event stream, after the last entry seen."""
        headers = {"Accept": "text/event-stream"}
        if self.since is not None:
            headers["Last-Event-ID"] = self.since
        return headers

    def opened(self, response: httpx.Response) -> None:
        """Raise the error of an answer that is not the stream; 429 and 503 come back."""
        if response.status_code == 200:
            return
        response.read()
        if response.status_code in (429, 503):
            raise _Again(retry_after(response))
        raise error_for(response)

    def seen(self, event: LiveEvent) -> None:
        """An event arrived: a healthy stream, and an entry to resume after."""
        self._failures = 0
        if isinstance(event, InboxEntryView):
            self.since = event.id

    def wait(self, asked: float | None = None) -> float:
        """Seconds before the next attempt (exponential, jittered; Retry-After when asked)."""
        ceiling = min(self.max_backoff, self.backoff * 2.0**self._failures)
        self._failures += 1
        return asked if asked is not None else ceiling / 2 * (1 + self.jitter())


class _Again(Exception):
    """A refusal worth trying again after a while (429, 503)."""

    def __init__(self, after: float | None) -> None:
        super().__init__(after)
        self.after = after


AGAIN: tuple[type[Exception], ...] = (_Again, httpx.TransportError)


def asked_wait(error: Exception) -> float | None:
    """The Retry-After a refusal asked for, if any."""
    return error.after if isinstance(error, _Again) else None
