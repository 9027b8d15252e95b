"""Routes by resource; each module exposes ``routes``."""

from __future__ import annotations

import gzip
from collections.abc import Sequence

from starlette.requests import Request
from starlette.responses import Response

from pushcore.converter import View, to_json
from pushcore_http.rendering import JSONResponse
from pushcore_http.state import services_of as services_of  # routes read it from here


def view_response(data: View | Sequence[View], status_code: int = 200) -> JSONResponse:
    """A JSON response whose body is a view, or an array of views."""
    body = to_json(data) if isinstance(data, View) else [to_json(v) for v in data]
    return JSONResponse(body, status_code)


# Below this, gzip's own bytes and its CPU cost more than they save.
GZIP_FROM = 1024


def gzipped(request: Request, response: Response) -> Response:
    """``response`` gzipped when the client takes gzip and the body is large enough to
    gain. For the answers the app waits for on its first screen (the inbox's first page:
    11 of its 12 KB saved), which Lighthouse counted against the app's first paint.
    A whole body only: never the live channel or any other stream."""
    response.headers["Vary"] = "Accept-Encoding"
    if len(response.body) < GZIP_FROM or not takes_gzip(request.headers.get("accept-encoding", "")):
        return response
    response.body = gzip.compress(response.body, 6, mtime=0)
    response.headers["Content-Encoding"] = "gzip"
    response.headers["Content-Length"] = str(len(response.body))
    return response


def takes_gzip(accept_encoding: str) -> bool:
    """Whether an Accept-Encoding header takes gzip: named (or ``*``) with a weight above 0."""
    taken: dict[str, bool] = {}
    for part in accept_encoding.lower().split(","):
        coding, *params = (p.strip() for p in part.split(";"))
        weight = next((p.removeprefix("q=") for p in params if p.startswith("q=")), "1")
        try:
            taken[coding] = float(weight) > 0
        except ValueError:
            taken[coding] = False
    return taken.get("gzip", taken.get("x-gzip", taken.get("*", False)))
