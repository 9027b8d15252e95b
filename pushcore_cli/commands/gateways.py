"""pushctl gateways: is each push platform configured, and do its credentials work?"""

from __future__ import annotations

import json

import typer

from pushcore_cli import output
from pushcore_cli.commands import state_of

app = typer.Typer(
    help="Push platform gateways.\n\nExample: pushctl gateways check",
    no_args_is_help=True,
)


@app.command("check")
def check(ctx: typer.Context, json_output: output.JsonOption = False) -> None:
    """Load and sign with each configured platform's credentials (nothing is sent).

    Exits 1 when a configured platform's credentials do not work.

    Example: PUSHCORE_VAPID_SUBJECT=mailto:ops@example.com pushctl gateways check
    """
    from pushcore.gateways.checks import check_gateways
    from pushcore.runtime.system import SystemClock

    results = check_gateways(state_of(ctx).settings, SystemClock())
    if json_output:
        rows = [
            {
                "platform": r.platform.value,
                "configured": r.configured,
                "ok": r.ok,
                "detail": r.detail,
            }
            for r in results
        ]
        typer.echo(json.dumps(rows, indent=2))
    else:
        for r in results:
            state = "ready" if r.ok else ("BROKEN" if r.configured else "off")
            typer.echo(f"{r.platform.value:<8} {state:<6} {r.detail}")
    if any(r.configured and not r.ok for r in results):
        raise typer.Exit(1)
