"""Writes benchmark results into docs/benchmarks.md, one section per benchmark."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parent.parent / "docs" / "benchmarks.md"
HEADER = """# Benchmarks

Each section is written by the benchmark named in it; run it again to refresh it.
Figures are from the machine named in the section, not promises for yours.
"""


def write_section(name: str, body: str) -> None:
    """Replace (or add) the ``## name`` section of docs/benchmarks.md."""
    text = DOC.read_text(encoding="utf-8") if DOC.exists() else HEADER
    section = f"## {name}\n\n{body.strip()}\n"
    pattern = re.compile(rf"^## {re.escape(name)}\n.*?(?=^## |\Z)", re.DOTALL | re.MULTILINE)
    if pattern.search(text):
        text = pattern.sub(lambda _m: section + "\n", text).rstrip() + "\n"
    else:
        text = text.rstrip() + "\n\n" + section
    DOC.write_text(text, encoding="utf-8")


def write_run(name: str, body: str) -> None:
    """Replace the latest run's figures inside the ``## name`` section, between its
    ``<!-- latest run -->`` marks, keeping the section's other text; without the
    marks the whole section is written, as :func:`write_section` does."""
    text = DOC.read_text(encoding="utf-8") if DOC.exists() else HEADER
    start, end = re.escape("<!-- latest run -->"), re.escape("<!-- /latest run -->")
    # Within the section: no other section's heading between its own and the marks.
    within = r"(?:(?!^## ).)*?"
    pattern = re.compile(
        rf"(^## {re.escape(name)}\n{within}{start}\n){within}(?={end})", re.DOTALL | re.MULTILINE
    )
    if not pattern.search(text):
        write_section(name, f"<!-- latest run -->\n{body.strip()}\n<!-- /latest run -->")
        return
    DOC.write_text(pattern.sub(lambda m: m.group(1) + body.strip() + "\n", text), encoding="utf-8")
