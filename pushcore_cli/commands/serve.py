"""pushctl serve: the HTTP API in one process, on the same services as every other command."""

from __future__ import annotations

from typing import Annotated

import typer

from pushcore.bootstrap import build_services
from pushcore_cli import output
from pushcore_cli.commands import configure_logging, state_of


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def serve(
    ctx: typer.Context,
    host: Annotated[
        str | None,
        typer.Option("--host", help="Address to listen on. Default: PUSHCORE_HOST or 127.0.0.1."),
    ] = None,
    port: Annotated[
        int | None,
        typer.Option(
            "--port", min=0, max=65535, help="Port to listen on. Default: PUSHCORE_PORT or 8080."
        ),
    ] = None,
    engine: Annotated[
        bool,
        typer.Option(
            "--engine/--no-engine",
            help="Deliver in this process too (default), or serve the API only and leave"
            " delivery to `pushctl worker` processes.",
        ),
    ] = True,
) -> None:
    """Run the HTTP API server (and the delivery engine) until stopped (Ctrl-C or SIGTERM).

    Example: pushctl serve --port 8080
    """
    # Imported here: the server's dependencies are not needed by any other command.
    import uvicorn

    from pushcore_http import create_app
    from pushcore_http.server import server_options

    settings = state_of(ctx).settings
    host = settings.host if host is None else host
    port = settings.port if port is None else port
    log_level = settings.log_level.lower()
    configure_logging(log_level)
    # Not the CLI's shared services: the app's lifespan owns and closes these.
    app = create_app(build_services(settings), run_engine=engine)
    output.say(f"pushcore serving on {_url(host, port)} (data directory: {settings.data_dir})")
    uvicorn.run(app, **server_options(settings, host=host, port=port))
