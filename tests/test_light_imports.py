"""What a program pays to import pushcore for the Client, and pushctl to start: no server
code (API.md's quick start; docs/benchmarks.md has the times)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

SERVER_PACKAGES = ("aiohttp", "h2", "argon2", "uvicorn", "starlette", "psycopg", "authlib")


def loaded_after(code: str) -> set[str]:
    """The top-level packages a fresh interpreter has loaded after running ``code``."""
    listing = "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    probe = f"{code}\nimport json, sys\n{listing}"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


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
    loaded = loaded_after("import pushcore; pushcore.build_services, pushcore.Services")
    assert "pushcore" in loaded
    assert "aiohttp" in loaded  # the gateways come with the services


def test_pushctl_version_loads_no_command() -> None:
    loaded = loaded_after(
        "import sys; sys.argv = ['pushctl', '--version']\n"
        "from pushcore_cli.entry import main\nmain()"
    )
    assert loaded.isdisjoint({*SERVER_PACKAGES, "typer", "httpx"})
