"""The app's files, headers and QR codes (pushcore_http/routes/web_app.py), without a browser."""

from __future__ import annotations

import gzip
import io
import json
import re
from pathlib import Path

import pytest
import segno
from starlette.testclient import TestClient

from pushcore import build_services, load_settings
from pushcore_http import create_app
from pushcore_http.routes.web_app import assets

SECURITY = ("content-security-policy", "x-content-type-options", "referrer-policy")


def _secure(response_headers: object) -> None:
    headers = dict(response_headers)  # type: ignore[call-overload]
    csp = headers["content-security-policy"]
    assert "unsafe-inline" not in csp
    assert "unsafe-eval" not in csp
    assert "script-src 'self'" in csp
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "no-referrer"


def test_root_redirects_to_the_app(client: TestClient) -> None:
    response = client.get("/", follow_redirects=False)
    assert response.status_code == 302
    assert response.headers["location"] == "/app/"


@pytest.mark.parametrize("path", ["/app/", "/app/streams", "/app/subscribe/abandon-7k2q"])
def test_screens_get_the_shell_with_the_security_headers(client: TestClient, path: str) -> None:
    response = client.get(path)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    assert '<script type="module" src="/app/js/main.js">' in response.text
    _secure(response.headers)


def test_no_inline_script_style_or_handler_in_the_shell(client: TestClient) -> None:
    page = client.get("/app/").text
    assert not re.search(r"<script(?![^>]*\bsrc=)", page)
    assert "<style" not in page
    assert not re.search(r"\s(style|on[a-z]+)=", page)


def test_every_script_is_a_module_from_the_package_and_nothing_from_elsewhere() -> None:
    for name, asset in assets().items():
        if name.endswith((".js", ".html", ".css", ".webmanifest")):
            text = asset.body.decode()
            # No address of another host: every file comes from this server.
            assert not re.search(r"https?://[a-z]", text), name
            assert "eval(" not in text, name
            assert "innerHTML" not in text, name


def test_the_service_worker_is_scoped_to_the_app_and_versioned(client: TestClient) -> None:
    response = client.get("/app/sw.js")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/javascript")
    assert response.headers["service-worker-allowed"] == "/app/"
    assert "__APP_VERSION__" not in response.text
    assert re.search(r'"pushcore-app-[0-9a-f]{16}"', response.text)
    _secure(response.headers)


def test_the_manifest_names_its_icons_and_they_are_served(client: TestClient) -> None:
    response = client.get("/app/manifest.webmanifest")
    assert response.headers["content-type"] == "application/manifest+json"
    manifest = json.loads(response.text)
    assert manifest["scope"] == "/app/"
    assert manifest["start_url"] == "/app/"
    sizes = {(icon["sizes"], icon["purpose"]) for icon in manifest["icons"]}
    assert {("192x192", "any"), ("512x512", "any"), ("512x512", "maskable")} <= sizes
    for icon in manifest["icons"]:
        png = client.get(icon["src"])
        assert png.status_code == 200
        assert png.content.startswith(b"\x89PNG")
        width, height = int.from_bytes(png.content[16:20]), int.from_bytes(png.content[20:24])
        assert f"{width}x{height}" == icon["sizes"]


def test_every_shell_file_the_worker_caches_exists(client: TestClient) -> None:
    worker = client.get("/app/sw.js").text
    shell = re.search(r"const SHELL = \[(.*?)\];", worker, re.DOTALL)
    assert shell is not None
    for path in re.findall(r'"(/app/[^"]*)"', shell.group(1)):
        assert client.get(path).status_code == 200, path


def test_every_module_is_cached_by_the_worker() -> None:
    worker = assets()["sw.js"].body.decode()
    for name in assets():
        if name.startswith("js/"):
            assert f'"/app/{name}"' in worker, name


def test_assets_are_compressed_and_revalidated(client: TestClient) -> None:
    response = client.get("/app/js/api.js", headers={"Accept-Encoding": "gzip"})
    assert response.headers["content-encoding"] == "gzip"
    assert response.headers["cache-control"] == "no-cache"
    again = client.get("/app/js/api.js", headers={"If-None-Match": response.headers["etag"]})
    assert again.status_code == 304


def test_an_asset_is_plain_for_a_client_that_refuses_gzip_by_weight(client: TestClient) -> None:
    refused = client.get("/app/js/api.js", headers={"Accept-Encoding": "gzip;q=0, identity"})
    assert "content-encoding" not in refused.headers
    assert refused.text.startswith(("//", "/*", "import", "export", '"use strict"'))


def test_the_whole_first_load_is_small() -> None:
    """What a first visit fetches (the worker then caches it), gzipped: far under 150 KB."""
    total = sum(len(a.gzipped) for n, a in assets().items() if not n.endswith(".png"))
    total += len(assets()["icons/icon-192.png"].body)
    assert total < 150_000
    assert gzip.decompress(assets()["index.html"].gzipped) == assets()["index.html"].body


def test_unknown_files_are_404_with_the_headers(client: TestClient) -> None:
    response = client.get("/app/nothing.js")
    assert response.status_code == 404
    _secure(response.headers)


def test_the_qr_code_is_an_svg_of_the_share_link(client: TestClient) -> None:
    response = client.get("/app/qr/abandon-7k2q.svg")
    assert response.status_code == 200
    assert response.headers["content-type"] == "image/svg+xml"
    assert response.text.startswith('<svg xmlns="http://www.w3.org/2000/svg"')
    _secure(response.headers)
    assert client.get("/app/qr/not_a_code.svg").status_code == 404


def _qr_of(link: str) -> str:
    """The SVG segno draws for ``link`` with the app's options, to compare answers with."""
    out = io.BytesIO()
    segno.make(link, error="m").save(
        out, kind="svg", xmldecl=False, svgns=True, scale=4, border=4, dark="#000", light="#fff"
    )
    return out.getvalue().decode()


def test_without_a_public_url_the_qr_code_is_never_kept_by_a_shared_cache(
    client: TestClient,
) -> None:
    response = client.get("/app/qr/abandon-7k2q.svg", headers={"Host": "evil.example"})
    assert response.status_code == 200
    cache = response.headers["cache-control"]
    # A shared cache keeps neither a private answer nor, keyed without Host, one that varies on it.
    assert "public" not in cache
    assert "private" in cache or "host" in response.headers.get("vary", "").lower()


def test_with_a_public_url_a_forged_host_gets_the_public_urls_qr_code(tmp_path: Path) -> None:
    settings = load_settings(
        env={}, data_dir=tmp_path / "data", public_url="https://push.example/base/"
    )
    services = build_services(settings)
    try:
        with TestClient(create_app(services, run_engine=False)) as client:
            response = client.get("/app/qr/abandon-7k2q.svg", headers={"Host": "evil.example"})
    finally:
        services.close()
    assert response.status_code == 200
    assert response.text == _qr_of("https://push.example/base/app/subscribe/abandon-7k2q")
    assert response.text != _qr_of("http://evil.example/app/subscribe/abandon-7k2q")


def test_the_shell_names_the_public_url_for_share_links(tmp_path: Path) -> None:
    settings = load_settings(
        env={}, data_dir=tmp_path / "data", public_url="https://push.example/base/"
    )
    services = build_services(settings)
    try:
        with TestClient(create_app(services, run_engine=False)) as client:
            shell = client.get("/app/streams", headers={"Host": "evil.example"}).text
            worker = client.get("/app/sw.js").text
    finally:
        services.close()
    assert '<meta name="pushcore-share-base" content="https://push.example/base">' in shell
    # The worker's version changes with it, so installed apps take the new shell.
    assert worker != assets()["sw.js"].body.decode()


def test_without_a_public_url_the_shell_leaves_share_links_to_the_page(
    client: TestClient,
) -> None:
    assert '<meta name="pushcore-share-base" content="">' in client.get("/app/").text


def test_without_a_vapid_subject_the_shell_says_web_push_is_off(client: TestClient) -> None:
    # The test services set no PUSHCORE_VAPID_SUBJECT and no https public URL.
    assert '<meta name="pushcore-web-push" content="off">' in client.get("/app/").text


def test_an_https_public_url_turns_web_push_on_in_the_shell(tmp_path: Path) -> None:
    settings = load_settings(env={}, data_dir=tmp_path / "data", public_url="https://push.example")
    services = build_services(settings)
    try:
        with TestClient(create_app(services, run_engine=False)) as client:
            shell = client.get("/app/").text
    finally:
        services.close()
    # The VAPID subject defaults to the https public URL, so this server sends Web Push.
    assert '<meta name="pushcore-web-push" content="on">' in shell
