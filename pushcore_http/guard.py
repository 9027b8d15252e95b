"""Refusing the NUL character wherever a request can carry one into the store.

No id, code, token or text of pushcore contains U+0000, and PostgreSQL's text
type cannot hold it at all (psycopg refuses to send it). So a path with one
names nothing (404), and a JSON body string with one is a validation error
(see :func:`pushcore_http.body.read_json`), on every store alike.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from pushcore_http.errors import error_response


class RefuseNulPaths:
    """404 for a request whose (decoded) path contains NUL, before any route runs."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and "\x00" in scope["path"]:
            await error_response(404, "Not found", "not_found")(scope, receive, send)
            return
        await self.app(scope, receive, send)
