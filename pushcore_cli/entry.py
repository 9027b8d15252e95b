"""The ``pushctl`` console entry point: answers ``--version`` before loading the commands.

Building the command tree imports every command module (Typer reads their
signatures); a version check should not pay for that.
"""

from __future__ import annotations

import sys

from pushcore import __version__


def main() -> None:
    """Run pushctl (``pushctl --version`` straight away)."""
    if sys.argv[1:] == ["--version"]:
        print(f"pushctl {__version__}")
        return
    # httpx imports its own command line when it is first imported (httpx._main: rich's
    # progress bars and pygments' lexers, ~0.1 s), and falls back to a stub when that
    # import fails; pushctl never runs it. A None entry makes that import fail.
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
    from pushcore_cli.main import main as run

    run()
