"""docs/architecture.md's worked example of a new notification field, applied and tried.

The example's blocks go into a copy of the product packages (each at the end
of the class its first line names; the migration under the next free number),
and a fresh interpreter then checks what the doc says follows from them alone:
HTTP takes and shows the field and refuses it past its limit, the OpenAPI
document has it, the client takes it as a keyword and `pushctl send` as an
option. When the code moves so that the four blocks no longer suffice, this
fails and the doc is due for a change.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
PACKAGES = ("pushcore", "pushcore_http", "pushcore_cli")

CHECK = """
import inspect, json, sys
from pathlib import Path
from starlette.testclient import TestClient
from typer.testing import CliRunner
from pushcore import build_services, load_settings
from pushcore import Client
from pushcore_cli.main import app as cli
from pushcore_http import create_app

services = build_services(load_settings(env={}, data_dir=Path(sys.argv[1])))
with TestClient(create_app(services, run_engine=False)) as http:
    token = services.tokens.issue("alice", __import__("datetime").timedelta(hours=1))
    key = http.post("/api/keys", json={"name": "k", "scopes": ["notifications:read",
        "notifications:write"]}, headers={"Authorization": f"Bearer {token}"}).json()["key"]
    made = http.post("/api/notifications", json={"title": "t", "subtitle": "main"},
        headers={"X-API-Key": key})
    shown = http.get(f"/api/notifications/{made.json()['id']}", headers={"X-API-Key": key})
    long = http.post("/api/notifications", json={"title": "t", "subtitle": "x" * 101},
        headers={"X-API-Key": key})
    schema = http.get("/openapi.json").json()["components"]["schemas"]
services.close()
help_text = CliRunner().invoke(cli, ["send", "--help"], env={"COLUMNS": "200"}).output
print(json.dumps({
    "made": made.status_code,
    "shown": shown.json().get("subtitle"),
    "long": [long.status_code, [d["field"] for d in long.json().get("details", [])]],
    "documented": "subtitle" in json.dumps(schema),
    "keyword": "subtitle" in inspect.signature(Client("http://x").notifications.create).parameters,
    "option": "--subtitle" in help_text and "A line under the title." in help_text,
}))
"""


def _blocks() -> list[tuple[str, str]]:
    """The example's blocks: (first line naming file and class, the code after it)."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    start = text.index("The worked example, which `tests/test_docs_field.py`")
    end = text.index("With those alone:", start)
    found = re.findall(r"```(?:sql|python)\n(.*?)```", text[start:end], re.DOTALL)
    blocks = []
    for block in found:
        head, _, code = textwrap.dedent(block).partition("\n")
        blocks.append((head, code))
    return blocks


def _insert_at_class_end(source: str, name: str, code: str) -> str:
    lines = source.splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if line.startswith(f"class {name}"))
    end = next(
        (i for i in range(first + 1, len(lines)) if lines[i].strip() and lines[i][0] != " "),
        len(lines),
    )
    while not lines[end - 1].strip():
        end -= 1
    return "".join([*lines[:end], textwrap.indent(code, "    "), *lines[end:]])


@pytest.mark.slow
def test_the_worked_example_of_a_field_is_all_a_field_needs(tmp_path: Path) -> None:
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    blocks = _blocks()
    assert len(blocks) == 4
    migrations = tmp_path / "pushcore" / "storage" / "migrations"
    for head, code in blocks:
        if head.startswith("-- "):
            number = max(int(p.name[:4]) for p in migrations.glob("[0-9]*.sql")) + 1
            (migrations / f"{number:04d}_subtitle.sql").write_text(code, encoding="utf-8")
            continue
        path, _, where = head.removeprefix("# ").partition(", class ")
        target = tmp_path / path
        target.write_text(_insert_at_class_end(target.read_text(), where, code))
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "COLUMNS": "200"}
    ran = subprocess.run(
        [sys.executable, "-c", CHECK, str(tmp_path / "data")],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    seen = json.loads(ran.stdout.strip().splitlines()[-1])
    assert seen == {
        "made": 201,
        "shown": "main",
        "long": [400, ["subtitle"]],
        "documented": True,
        "keyword": True,
        "option": True,
    }
