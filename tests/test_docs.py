"""The docs hold together: links stay in the repository, tables render, every command is
documented (sqlite-utils' test_docs habit)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pushcore_cli.main import app
from tests.cli.runner import CliRunner
from tests.cli.test_help import PATHS

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
GROUPS = {path[:-1] for path in PATHS if path}
COMMANDS = [path for path in PATHS if path and path not in GROUPS]

# [text](target) and <scheme://...>; code spans and fenced blocks are not links.
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
AUTOLINK = re.compile(r"<([a-z][a-z0-9+.-]*:[^>\s]+)>", re.IGNORECASE)
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`[^`\n]*`")


def prose(path: Path) -> str:
    """The Markdown of ``path`` without fenced blocks and code spans."""
    return CODE_SPAN.sub("", FENCE.sub("", path.read_text(encoding="utf-8")))


def links(path: Path) -> list[str]:
    text = prose(path)
    return [*LINK.findall(text), *AUTOLINK.findall(text)]


def name(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("doc", DOCS, ids=name)
def test_links_point_at_files_of_the_repository(doc: Path) -> None:
    for target in links(doc):
        assert not re.match(r"[a-z][a-z0-9+.-]*:", target, re.IGNORECASE), (
            f"{name(doc)} links outside the repository: {target}"
        )
        file_part = target.split("#")[0]
        if not file_part:
            continue  # an anchor on the same page
        resolved = (doc.parent / file_part).resolve()
        assert resolved.is_relative_to(ROOT), f"{name(doc)} links outside the repo: {target}"
        assert resolved.exists(), f"{name(doc)} links to a missing file: {target}"


def test_the_link_check_finds_links() -> None:
    assert "docs/cli.md" in links(ROOT / "README.md")


def cells(row: str) -> int:
    """How many cells a table row has (``\\|`` is a pipe inside a cell)."""
    return len(re.split(r"(?<!\\)\|", row.strip().strip("|")))


def tables(path: Path) -> list[list[str]]:
    """Each table of ``path`` as its rows, the delimiter row included."""
    found: list[list[str]] = []
    current: list[str] = []
    for line in FENCE.sub("", path.read_text(encoding="utf-8")).splitlines():
        if line.lstrip().startswith("|"):
            current.append(line)
        elif current:
            found.append(current)
            current = []
    if current:
        found.append(current)
    return found


@pytest.mark.parametrize("doc", DOCS, ids=name)
def test_tables_render(doc: Path) -> None:
    for rows in tables(doc):
        header, *rest = rows
        assert rest, f"{name(doc)}: a table with no rows: {header}"
        assert re.fullmatch(r"\|?(\s*:?-+:?\s*\|)*\s*:?-+:?\s*\|?", rest[0].strip()), (
            f"{name(doc)}: a table without its header and delimiter rows, from: {header}"
        )
        for row in rest:
            assert cells(row) == cells(header), f"{name(doc)}: {row}"


def test_the_table_check_counts_cells() -> None:
    assert cells("| a | b \\| c |") == 2
    assert cells("| `a|b` | c |") == 3


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_is_in_the_cli_docs(command: tuple[str, ...]) -> None:
    assert f"pushctl {' '.join(command)}" in (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_has_help_with_an_example(command: tuple[str, ...]) -> None:
    result = CliRunner().invoke(app, [*command, "--help"])

    assert result.exit_code == 0, result.output
    example = result.stdout.split("Example:", 1)[1].splitlines()[0]
    assert f"pushctl {' '.join(command)}" in example
