"""Local mode's client: :class:`pushcore.Client` over the HTTP app, in this process.

Every account command speaks the client's interface. With ``--url`` the
client talks to a server; without, to :func:`pushcore_http.app.create_app`
on the local services, through :class:`AppTransport`, so that a command is
written once and both modes run the same routes, validation, views and error
map. No socket is opened and no engine runs (``run_engine`` is off and the
app's lifespan is never entered: the command closes the services itself).
A plain ``pushctl send`` builds none of it: it goes straight to the service
(:mod:`pushcore_cli.local_send`), and here only for what the app must answer.

The app authenticates with :class:`ActingAs`: its one credential, a random
value that never leaves this process, is the account given by ``--account``.
"""

from __future__ import annotations

import asyncio
import hmac
import secrets
from collections.abc import Iterator, MutableMapping
from typing import TYPE_CHECKING, Any

import attrs
import httpx

from pushcore.client import Client
from pushcore.domain.errors import Unauthorized
from pushcore.services import AuthService, CredentialKind, Principal, Services

if TYPE_CHECKING:
    from starlette.applications import Starlette

# Never resolved (RFC 2606 reserves .invalid): AppTransport answers every request.
LOCAL_URL = "http://pushctl.invalid"


class AppTransport(httpx.BaseTransport):
    """httpx's synchronous transport onto an ASGI app in this process, on an event loop
    of its own (httpx has only an asynchronous one, :class:`httpx.ASGITransport`)."""

    def __init__(self, app: Starlette) -> None:
        # Exceptions the app does not answer (bugs, an unreadable database) are
        # raised here, as they were when the commands called the services.
        self._asgi = httpx.ASGITransport(app)
        self._loop = asyncio.Runner()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """The app's answer to ``request``: read whole, or as it comes for an event stream
        (the live channel, which never ends by itself)."""
        if request.headers.get("accept") == "text/event-stream":
            return self._loop.run(self._stream(request))
        return self._loop.run(self._answer(request))

    async def _stream(self, request: httpx.Request) -> httpx.Response:
        # httpx.ASGITransport reads a whole body before it answers; here the app
        # runs as a task of this transport's loop, which runs while the caller
        # waits for the next piece (AppStream), so the app works only then.
        pieces: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        gone = asyncio.Event()
        body: bytes | None = request.read()

        async def receive() -> dict[str, Any]:
            nonlocal body
            if body is not None:
                sent, body = body, None
                return {"type": "http.request", "body": sent, "more_body": False}
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: MutableMapping[str, Any]) -> None:
            await pieces.put(dict(message))

        scope = {
            "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
            "method": request.method, "scheme": request.url.scheme,
            "headers": [(k.lower(), v) for k, v in request.headers.raw],
            "path": request.url.path, "raw_path": request.url.raw_path.split(b"?")[0],
            "query_string": request.url.query, "server": (request.url.host, request.url.port),
            "client": ("127.0.0.1", 0), "root_path": "",
        }  # fmt: skip
        task = asyncio.ensure_future(self._asgi.app(scope, receive, send))
        start = await pieces.get()
        stream = AppStream(self._loop, pieces, task, gone)
        return httpx.Response(start["status"], headers=start.get("headers", []), stream=stream)

    async def _answer(self, request: httpx.Request) -> httpx.Response:
        response = await self._asgi.handle_async_request(request)
        content = await response.aread()
        return httpx.Response(response.status_code, headers=response.headers, content=content)

    def close(self) -> None:
        """Close the event loop (its threads included)."""
        self._loop.close()


class AppStream(httpx.SyncByteStream):
    """The body of an in-process answer, piece by piece, as the app sends it."""

    def __init__(
        self,
        loop: asyncio.Runner,
        pieces: asyncio.Queue[dict[str, Any]],
        task: asyncio.Future[None],
        gone: asyncio.Event,
    ) -> None:
        self._loop, self._pieces, self._task, self._gone = loop, pieces, task, gone

    def __iter__(self) -> Iterator[bytes]:
        while True:
            message = self._loop.run(self._pieces.get())
            if message.get("body"):
                yield message["body"]
            if not message.get("more_body", False):
                return

    def close(self) -> None:
        """The client went away: the app hears a disconnect, its task ends."""

        async def end() -> None:
            self._gone.set()
            # The app's task, and a wait for its next piece that an interrupt (Ctrl-C,
            # SIGTERM) left pending: nothing of this answer outlives it.
            others = asyncio.all_tasks() - {asyncio.current_task()}
            for task in others:
                task.cancel()
            await asyncio.gather(*others, return_exceptions=True)

        self._loop.run(end())


class ActingAs(AuthService):
    """Authentication of the local app: its one credential is the account acted as.

    A user principal, so every endpoint takes it with every right of the
    account, as ``--account`` always had. It replaces each method of
    :class:`AuthService` the app calls, so it needs none of its state.
    """

    def __init__(self, account: str) -> None:  # no super().__init__(): nothing of it is read
        self.account = account
        self.credential = secrets.token_urlsafe(32)

    def _acting(self, credential: str) -> Principal:
        if not hmac.compare_digest(credential.encode(), self.credential.encode()):
            raise Unauthorized("Invalid token")
        return Principal(self.account, CredentialKind.USER)

    def authenticate_token(self, token: str) -> Principal:
        """The account, for the in-process credential sent as a Bearer token."""
        return self._acting(token)

    def cached_key(self, key: str) -> Principal | None:
        """The account, for the in-process credential sent as an API key."""
        return self._acting(key)

    def authenticate_key(self, key: str) -> Principal:
        """The account, for the in-process credential sent as an API key."""
        return self._acting(key)


def local_client(services: Services, account: str) -> Client:
    """A :class:`pushcore.Client` on the app over ``services``, acting as ``account``."""
    # Imported here: Starlette is needed by local account commands only.
    from pushcore_http.app import create_app

    auth = ActingAs(account)
    app = create_app(attrs.evolve(services, auth=auth), run_engine=False)
    credential = auth.credential
    # In process, a failed attempt would fail again: no retries, no waits.
    return Client(
        LOCAL_URL, api_key=credential, token=credential, retries=0, transport=AppTransport(app)
    )
