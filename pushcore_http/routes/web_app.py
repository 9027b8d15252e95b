"""The people's app at /app/: its static files, the service worker, share-link QR codes.

Every file comes from the package (``pushcore_http/webapp``), read and gzipped
once per process. A path under /app/ that names no file and looks like a
screen (``/app/streams``, ``/app/subscribe/falcon-7k2q``) gets the shell, so
links and reloads land on the screen they name.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import html
import io
import mimetypes
import re
from importlib import resources
from importlib.resources.abc import Traversable

import attrs
import segno
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from pushcore.domain.codes import is_stream_code
from pushcore_http.auth import PUBLIC
from pushcore_http.endpoints import Endpoints
from pushcore_http.routes import services_of, takes_gzip

PACKAGE_DIR = "webapp"
SHELL = "index.html"
WORKER = "sw.js"
# The service worker's cache name carries this placeholder; it becomes a digest
# of every file, so any change to the app makes browsers install the new one.
VERSION_MARK = "__APP_VERSION__"
# With PUSHCORE_PUBLIC_URL set, the shell names it here, so the share link the
# app shows is the one its QR code encodes, whichever host the page came from.
SHARE_BASE_MARK = b'<meta name="pushcore-share-base" content="">'
# Whether this server sends Web Push (a VAPID subject is set): without it the app
# says so in words instead of subscribing a browser nothing will ever reach.
WEB_PUSH_MARK = b'<meta name="pushcore-web-push" content="on">'
TYPES = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".html": "text/html; charset=utf-8",
    ".webmanifest": "application/manifest+json",
    ".png": "image/png",
    ".svg": "image/svg+xml",
}
# Only our own files run or style the page (no inline script, style or attribute);
# images may also come from the http(s) icon URLs of streams and senders.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "img-src 'self' https: http: data:; manifest-src 'self'; worker-src 'self'; "
    "font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; "
    "object-src 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
# A screen's path: letters, digits, hyphens and slashes, never a dot (files have one).
_SCREEN = re.compile(r"[a-z0-9/-]*")


@attrs.frozen
class Asset:
    """One file of the app, as sent."""

    body: bytes
    gzipped: bytes
    media_type: str
    etag: str


# The people's app: its pages and files, not the API (not in /openapi.json).
routes = Endpoints(None)


def _walk(folder: Traversable, prefix: str = "") -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for entry in folder.iterdir():
        name = prefix + entry.name
        if entry.is_dir():
            files.update(_walk(entry, name + "/"))
        elif not entry.name.startswith(".") and not entry.name.endswith(".py"):
            files[name] = entry.read_bytes()
    return files


@functools.cache
def assets(share_base: str = "", web_push: bool = True) -> dict[str, Asset]:
    """Every file of the app by its path under /app/, the worker's version filled in.

    ``share_base`` is PUSHCORE_PUBLIC_URL (or empty): the shell carries it for
    share links, and the worker's version changes with it. ``web_push`` says
    whether the server sends Web Push (PUSHCORE_VAPID_SUBJECT, or its https default).
    """
    files = _walk(resources.files("pushcore_http").joinpath(PACKAGE_DIR))
    meta = f'<meta name="pushcore-share-base" content="{html.escape(share_base)}">'
    shell = files[SHELL].replace(SHARE_BASE_MARK, meta.encode())
    if not web_push:
        shell = shell.replace(WEB_PUSH_MARK, WEB_PUSH_MARK.replace(b'"on"', b'"off"'))
    files[SHELL] = shell
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + files[name])
    version = digest.hexdigest()[:16]
    files[WORKER] = files[WORKER].replace(VERSION_MARK.encode(), version.encode())
    built: dict[str, Asset] = {}
    for name, body in files.items():
        suffix = "." + name.rsplit(".", 1)[-1]
        media_type = (
            TYPES.get(suffix) or mimetypes.guess_type(name)[0] or "application/octet-stream"
        )
        etag = '"' + hashlib.sha256(body).hexdigest()[:20] + '"'
        built[name] = Asset(body, gzip.compress(body, 9, mtime=0), media_type, etag)
    return built


def _send(request: Request, asset: Asset, extra: dict[str, str] | None = None) -> Response:
    headers = {
        **SECURITY_HEADERS,
        # Revalidated on every use (an ETag round trip): file names carry no hash,
        # and the service worker is what makes the app work offline.
        "Cache-Control": "no-cache",
        "ETag": asset.etag,
        "Vary": "Accept-Encoding",
        **(extra or {}),
    }
    if request.headers.get("if-none-match") == asset.etag:
        return Response(status_code=304, headers=headers)
    body = asset.body
    if takes_gzip(request.headers.get("accept-encoding", "")):
        body = asset.gzipped
        headers["Content-Encoding"] = "gzip"
    return Response(body, media_type=asset.media_type, headers=headers)


def _not_found() -> Response:
    return Response("Not found", 404, media_type="text/plain", headers=SECURITY_HEADERS)


@routes.get("/", "To the app", PUBLIC)
@routes.get("/app", "To the app", PUBLIC)
async def root(_request: Request) -> Response:
    """GET /: the app."""
    return RedirectResponse("/app/", 302)


@routes.get("/app/", "The app's shell", PUBLIC)
@routes.get("/app/{path:path}", "A file of the app, or its shell", PUBLIC)
async def app_file(request: Request) -> Response:
    """GET /app/{path}: a file of the app, or the shell for a screen's path."""
    path: str = request.path_params.get("path", "")
    settings = services_of(request).settings
    files = assets(settings.public_base, bool(settings.vapid_subject))
    if path == WORKER:
        # Served from /app/, its scope is /app/ by default; said explicitly all the same.
        return _send(request, files[WORKER], {"Service-Worker-Allowed": "/app/"})
    if path in files and path != SHELL:
        return _send(request, files[path])
    if _SCREEN.fullmatch(path):
        return _send(request, files[SHELL])
    return _not_found()


@routes.get("/app/qr/{code}.svg", "A share link's QR code", PUBLIC)
async def share_qr(request: Request) -> Response:
    """GET /app/qr/{code}.svg: the QR code of a stream's share link on this server."""
    code: str = request.path_params["code"]
    if not is_stream_code(code):
        return _not_found()
    public = services_of(request).settings.public_base
    # With PUSHCORE_PUBLIC_URL the link never depends on the request's Host,
    # so a shared cache may keep it. Without it the link follows Host: kept by
    # this browser only, or a forged Host would poison what others are shown.
    base = public or str(request.base_url).rstrip("/")
    cache = "public, max-age=86400" if public else "private, max-age=86400"
    headers = {**SECURITY_HEADERS, "Cache-Control": cache}
    if not public:
        headers["Vary"] = "Host"
    return Response(
        _qr_svg(f"{base}/app/subscribe/{code}"), media_type="image/svg+xml", headers=headers
    )


@functools.lru_cache(maxsize=256)
def _qr_svg(link: str) -> bytes:
    out = io.BytesIO()
    # A standalone document (an <img> needs the namespace), dark on white with a
    # quiet zone: scanners need the contrast whatever the page's theme.
    segno.make(link, error="m").save(
        out, kind="svg", xmldecl=False, svgns=True, scale=4, border=4, dark="#000", light="#fff"
    )
    return out.getvalue()
