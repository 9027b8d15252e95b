"""Local mode's client: :class:`pushcore.Client` over the HTTP app, in this process.

Every account command speaks the client's interface. With ``--url`` the
client talks to a server; without, to :func:`pushcore_http.app.create_app`
on the local services, through :class:`AppTransport`, so that a command is
written once and both modes run the same routes, validation, views and error
map. No socket is opened and no engine runs (``run_engine`` is off and the
app's lifespan is never entered: the command closes the services itself).

The app authenticates with :class:`ActingAs`: its one credential, a random
value that never leaves this process, is the account given by ``--account``.
"""

from __future__ import annotations

import asyncio
import hmac
import secrets
from typing import TYPE_CHECKING

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
        """The app's answer to ``request``, read whole."""
        return self._loop.run(self._answer(request))

    async def _answer(self, request: httpx.Request) -> httpx.Response:
        response = await self._asgi.handle_async_request(request)
        content = await response.aread()
        return httpx.Response(response.status_code, headers=response.headers, content=content)

    def close(self) -> None:
        """Close the event loop (its threads included)."""
        self._loop.close()


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
