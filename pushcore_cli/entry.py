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
    from pushcore_cli.main import main as run

    run()
