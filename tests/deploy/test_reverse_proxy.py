"""examples/deploy: the Caddy and nginx set-ups in front of a real `pushctl serve`, tried
over HTTPS on loopback as docs/deployment.md ("Onto a server") describes them.

Each proxy's tests skip when its binary is not installed; CI's .ci/run installs
both, and on any machine with `caddy` or `nginx` on PATH they run.
"""

from __future__ import annotations

import os
import shutil
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import trustme

from tests.e2e.server import Server, free_port

DEPLOY = Path(__file__).resolve().parents[2] / "examples" / "deploy"
PASSWORD = "correct horse battery staple 42"


def caddy_config(tmp: Path) -> Path:
    """examples/deploy/Caddyfile as tried on loopback: Caddy's own CA (local_certs), no
    redirect port, no admin endpoint; the site and upstream come from the environment."""
    wrapper = tmp / "Caddyfile"
    wrapper.write_text(
        "{\n\tlocal_certs\n\tskip_install_trust\n\tauto_https disable_redirects\n"
        f"\tgrace_period 1s\n\tadmin off\n\tstorage file_system {tmp / 'caddy'}\n}}\n"
        f"import {DEPLOY / 'Caddyfile'}\n"
    )
    return wrapper


def nginx_config(tmp: Path, ca: trustme.CA, upstream: int, https: int, http: int) -> Path:
    """examples/deploy/nginx.conf with this machine's certificate, name and ports, inside a
    minimal main configuration that keeps every file under ``tmp``."""
    cert = ca.issue_cert("localhost")
    cert.private_key_pem.write_to_path(str(tmp / "server.key"))
    cert.cert_chain_pems[0].write_to_path(str(tmp / "server.crt"))
    site = (DEPLOY / "nginx.conf").read_text()
    for old, new in {
        "/etc/letsencrypt/live/push.example.com/fullchain.pem": str(tmp / "server.crt"),
        "/etc/letsencrypt/live/push.example.com/privkey.pem": str(tmp / "server.key"),
        "server_name push.example.com": "server_name localhost",
        "server 127.0.0.1:8080": f"server 127.0.0.1:{upstream}",
        "listen 443 ssl": f"listen 127.0.0.1:{https} ssl",
        "listen [::]:443 ssl http2;": "",
        "listen 80;": f"listen 127.0.0.1:{http};",
        "listen [::]:80;": "",
    }.items():
        assert old in site, old
        site = site.replace(old, new)
    (tmp / "site.conf").write_text(site)
    (tmp / "temp").mkdir(exist_ok=True)
    main = tmp / "nginx.conf"
    main.write_text(
        f"pid {tmp / 'nginx.pid'};\nerror_log {tmp / 'error.log'};\ndaemon off;\n"
        "events {}\nhttp {\n"
        f"  access_log off;\n  client_body_temp_path {tmp / 'temp'};\n"
        f"  proxy_temp_path {tmp / 'temp'};\n  include {tmp / 'site.conf'};\n}}\n"
    )
    return main


def needs(binary: str) -> str:
    found = shutil.which(binary) or shutil.which(binary, path="/usr/sbin:/usr/bin")
    if found is None:
        pytest.skip(f"{binary} is not installed")
    return found


def test_the_caddyfile_is_valid(tmp_path: Path) -> None:
    caddy = needs("caddy")
    checked = subprocess.run(
        [caddy, "validate", "--adapter", "caddyfile", "--config", str(caddy_config(tmp_path))],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "HOME": str(tmp_path)},
        timeout=60,
    )
    assert checked.returncode == 0, checked.stderr


def test_the_nginx_site_is_valid(tmp_path: Path) -> None:
    nginx = needs("nginx")
    config = nginx_config(tmp_path, trustme.CA(), free_port(), free_port(), free_port())
    checked = subprocess.run(
        [nginx, "-t", "-c", str(config), "-e", str(tmp_path / "error.log")],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert checked.returncode == 0, checked.stderr


# Caddy 2.6 cleans its storage at start while it obtains the first certificate, and can
# delete the key it is writing ("Deleting ... because key is empty"); it then retries only
# after 60 s. A restart obtains again, so the fixture restarts rather than wait.
CADDY_STORAGE_RACE = "will retry"


def wait_for(url: str, verify: ssl.SSLContext, process: subprocess.Popen[bytes], log: Path) -> bool:
    """Until ``url`` answers 200 through the proxy: True; False when Caddy lost its first
    certificate to its own storage clean-up (see CADDY_STORAGE_RACE)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert process.poll() is None, log.read_text()
        try:
            if httpx.get(url, verify=verify, timeout=2).status_code == 200:
                return True
        except httpx.HTTPError:
            pass
        if CADDY_STORAGE_RACE in log.read_text():
            return False
        time.sleep(0.2)
    raise AssertionError(f"no answer through the proxy: {log.read_text()}")


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)


@pytest.fixture(params=["caddy", "nginx"])
def proxied(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[Server, str, ssl.SSLContext]]:
    """A `pushctl serve` (access log on), the proxy in front of it: server, the proxy's
    https base URL, and a TLS context that trusts the proxy's certificate."""
    binary = needs(request.param)
    server = Server(
        tmp_path / "data", {"PUSHCORE_ACCESS_LOG": "true", "PUSHCORE_LOG_LEVEL": "info"}
    )
    pushctl = [sys.executable, "-m", "pushcore_cli.main", "--data-dir", str(server.data_dir)]
    subprocess.run(
        [*pushctl, "accounts", "create", "alice", "--password-stdin"],
        input=PASSWORD.encode(),
        env=server.env,
        check=True,
        capture_output=True,
        timeout=60,
    )
    server.start(timeout=60)
    https = free_port()
    log = tmp_path / "proxy.log"
    if request.param == "caddy":
        command = [binary, "run", "--adapter", "caddyfile", "--config", str(caddy_config(tmp_path))]
        env = {
            **os.environ,
            "HOME": str(tmp_path),
            "PUSHCORE_SITE": f"localhost:{https}",
            "PUSHCORE_UPSTREAM": f"127.0.0.1:{server.port}",
        }
        ca_file = tmp_path / "caddy" / "pki" / "authorities" / "local" / "root.crt"
    else:
        ca = trustme.CA()
        ca_file = tmp_path / "ca.pem"
        ca.cert_pem.write_to_path(str(ca_file))
        config = nginx_config(tmp_path, ca, server.port, https, free_port())
        command = [binary, "-c", str(config), "-e", str(tmp_path / "error.log")]
        env = dict(os.environ)
    base = f"https://localhost:{https}"
    proxy: subprocess.Popen[bytes] | None = None
    try:
        for _ in range(3):
            with log.open("wb") as sink:
                proxy = subprocess.Popen(command, env=env, stdout=sink, stderr=subprocess.STDOUT)
            deadline = time.monotonic() + 30
            while not ca_file.exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            verify = ssl.create_default_context(cafile=str(ca_file))
            if wait_for(f"{base}/healthz", verify, proxy, log):
                break
            stop(proxy)
        else:
            raise AssertionError(f"no certificate after three starts: {log.read_text()}")
        yield server, base, verify
    finally:
        if proxy is not None:
            stop(proxy)
        server.stop()
        # Shown by pytest only when the test failed: what each side said.
        print("--- pushctl serve:", server.log.read_text()[-8000:], sep="\n")
        print("--- proxy:", log.read_text()[-8000:] if log.exists() else "", sep="\n")


@pytest.mark.slow
def test_the_api_the_app_and_the_live_channel_work_through_https(
    proxied: tuple[Server, str, ssl.SSLContext],
) -> None:
    server, base, ca = proxied
    pushctl = [sys.executable, "-m", "pushcore_cli.main", "--data-dir", str(server.data_dir)]
    token = subprocess.run(
        [*pushctl, "token", "issue", "alice"],
        env=server.env,
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.strip()
    user = {"Authorization": f"Bearer {token}"}
    # From another loopback address than the proxy's own, claiming a third one.
    transport = httpx.HTTPTransport(local_address="127.0.0.2", verify=ca)
    with httpx.Client(base_url=base, transport=transport, timeout=10) as client:
        # The metrics take no credentials: not served through the proxy.
        assert client.get("/metrics").status_code == 404
        assert client.get("/app/").status_code == 200
        # The client's address is the one the proxy saw, not one it wrote itself.
        assert client.get("/readyz", headers={"X-Forwarded-For": "6.6.6.6"}).status_code == 200
        # The app's session cookie is Secure: the server knows the page is https.
        login = client.post(
            "/app/session/login",
            json={"account": "alice", "password": PASSWORD},
            headers={"X-Pushcore-App": "1"},
        )
        assert login.status_code == 200, login.text
        assert "; Secure" in login.headers["set-cookie"]

        created = client.post(
            "/api/keys", json={"name": "proxy", "scopes": ["notifications:write"]}, headers=user
        )
        assert created.status_code == 201, created.text
        key = {"X-API-Key": created.json()["key"]}
        device = {"platform": "live", "token": "through-the-proxy", "name": "proxy"}
        assert client.post("/api/devices", json=device, headers=user).status_code == 201

        with client.stream("GET", "/api/inbox/events", headers=user) as events:
            lines = events.iter_lines()
            opened = time.monotonic()
            assert next(lines) == "retry: 2000"  # at once, not when a buffer fills
            assert time.monotonic() - opened < 5
            sent = client.post(
                "/api/notifications",
                json={"title": "through the proxy", "delay": "1s"},
                headers=key,
            )
            assert sent.status_code == 201, sent.text
            due = time.monotonic() + 1
            for line in lines:
                if line.startswith("data: ") and "through the proxy" in line:
                    break
            # Delivered at its due time (a 1 s scheduler tick at most), not held back.
            assert time.monotonic() - due < 3

    logged = server.log.read_text()
    assert '127.0.0.2:0 - "GET /readyz HTTP/1.1" 200' in logged
    assert "6.6.6.6" not in logged
