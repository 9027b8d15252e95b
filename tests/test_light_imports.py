"""What a program pays to import pushcore for the Client, and pushctl to start and to send:
no code it does not run (API.md's quick start; docs/benchmarks.md, "Quick start", has the
times and benchmarks/quickstart.py measures them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SERVER_PACKAGES = ("aiohttp", "h2", "argon2", "uvicorn", "starlette", "psycopg", "authlib")
# What a local `pushctl send` runs without: the delivery engine and the gateways (a send
# only queues), their HTTP clients and key handling, single sign-on, the other
# commands' modules, httpx's own command line (with pygments), and pydantic (Typer's
# coercion of option values, which pushctl's plain options do without); nor the HTTP
# app (a local send calls the service straight: pushcore_cli/local_send.py), httpx (no
# request leaves the process) and argon2 (no password is checked).
NOT_FOR_A_LOCAL_SEND = (
    "pushcore_http",
    "starlette",
    "httpx",
    "argon2",
    "pydantic",
    "aiohttp",
    "h2",
    "uvicorn",
    "psycopg",
    "authlib",
    "joserfc",
    "cryptography",
    "pygments",
    "pushcore.delivery",
    "pushcore.gateways.apns",
    "pushcore.gateways.fcm",
    "pushcore.gateways.webpush",
    "pushcore.gateways.webhook",
    "pushcore.gateways.vapid",
    "pushcore.outbound.oidc",
    "pushcore_cli.commands.serve",
    "pushcore_cli.commands.worker",
    "pushcore_cli.commands.listen",
    "pushcore_cli.commands.streams",
    "pushcore_cli.commands.accounts",
)


def modules_after(code: str, env: dict[str, str] | None = None) -> set[str]:
    """The modules a fresh interpreter has loaded after running ``code``."""
    # A None entry is an import blocked on purpose (pushcore_cli/entry.py's httpx._main).
    listing = "print(json.dumps(sorted(k for k, v in sys.modules.items() if v is not None)))"
    probe = f"{code}\nimport json, sys\n{listing}"
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env=env,
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


def loaded_after(code: str) -> set[str]:
    """The top-level packages a fresh interpreter has loaded after running ``code``."""
    return {name.split(".")[0] for name in modules_after(code)}


def among(loaded: set[str], names: tuple[str, ...]) -> set[str]:
    """Which of ``names`` (packages or modules, with what is under them) were loaded."""
    return {n for n in names for m in loaded if m == n or m.startswith(n + ".")}


@pytest.mark.parametrize(
    "code",
    [
        "import pushcore; pushcore.Client, pushcore.AsyncClient, pushcore.NotFound",
        "from pushcore import Client, ValidationError",
    ],
)
def test_the_client_loads_no_server_code(code: str) -> None:
    assert loaded_after(code).isdisjoint(SERVER_PACKAGES)


def test_the_rest_of_the_face_still_loads_on_first_use() -> None:
    loaded = modules_after("import pushcore; pushcore.build_services, pushcore.Services")
    assert {"pushcore.bootstrap", "pushcore.services"} <= loaded


def test_the_engine_brings_its_gateways() -> None:
    loaded = modules_after(
        "import tempfile\n"
        "from pushcore import build_engine, build_services, load_settings\n"
        "services = build_services(load_settings(env={}, data_dir=tempfile.mkdtemp()))\n"
        "build_engine(services)\n"
        "services.close()"
    )
    # APNs (h2) is built only when configured; webhooks (aiohttp) always are.
    wanted = ("aiohttp", "pushcore.delivery", "pushcore.gateways.webhook")
    assert among(loaded, wanted) == set(wanted)


def test_pushctl_version_loads_no_command() -> None:
    loaded = loaded_after(
        "import sys; sys.argv = ['pushctl', '--version']\n"
        "from pushcore_cli.entry import main\nmain()"
    )
    assert loaded.isdisjoint({*SERVER_PACKAGES, "typer", "httpx"})


def test_a_local_send_loads_only_what_it_runs(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PUSHCORE_")}
    argv = ["pushctl", "--data-dir", str(data_dir), "send", "Backup done", "--account", "a"]
    loaded = modules_after(
        f"import sys; sys.argv = {argv!r}\n"
        "from pushcore_cli.entry import main\n"
        "try:\n    main()\nexcept SystemExit as exit:\n    assert not exit.code, exit.code",
        env,
    )
    assert among(loaded, NOT_FOR_A_LOCAL_SEND) == set()
    # It did send: the notification is in the database.
    pushctl = [sys.executable, "-m", "pushcore_cli.main", "--data-dir", str(data_dir)]
    listed = subprocess.run(
        [*pushctl, "notifications", "list", "--account", "a", "--json"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env=env,
    )
    assert [n["title"] for n in json.loads(listed.stdout)["items"]] == ["Backup done"]


def test_the_event_senders_process_loads_neither_the_engine_nor_aiohttp(tmp_path: Path) -> None:
    # Its start is CPU taken from the engine beside it (docs/benchmarks.md, "Event
    # webhooks: beside the engine"): the child's own body, run until its SIGTERM.
    loaded = modules_after(
        "import os, signal, threading, time\n"
        "from pushcore import load_settings\n"
        "from pushcore.delivery.event_process import serve_events\n"
        f"settings = load_settings(env={{}}, data_dir={str(tmp_path / 'data')!r})\n"
        "def stop():\n"
        # Once its loop handles SIGTERM (its store opened, its sender started).
        "    while signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:\n"
        "        time.sleep(0.01)\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "threading.Thread(target=stop, daemon=True).start()\n"
        "serve_events(settings, os.getppid())"
    )
    assert "pushcore.delivery.webhooks" in loaded  # it did run the sender
    assert (
        among(loaded, ("aiohttp", "pushcore.delivery.engine", "pushcore.gateways.webhook")) == set()
    )
