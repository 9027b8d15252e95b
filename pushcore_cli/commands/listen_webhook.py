"""pushctl listen --webhook: a local webhook device that prints each notification.

It only receives: the deliveries come from whichever process runs the
delivery engine (``pushctl serve``) on the same database. Each delivery's
Standard Webhooks signature is checked with the secret the registration
answered: a POST that does not verify is refused (401) and not printed.
"""

from __future__ import annotations

import contextlib
import json
import queue
import secrets
import socket
import threading
import time
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import typer

from pushcore.domain.errors import NotFound, ValidationError
from pushcore.domain.model import Platform
from pushcore.domain.webhooks import verify
from pushcore_cli import output
from pushcore_cli.commands import Api
from pushcore_cli.commands.listen_output import POLL_SECONDS, describe, on_stop_signals

# A delivery payload is a few KiB at most (metadata is capped at 4 KiB).
MAX_BODY = 1024 * 1024
REGISTRATION_WAIT = 10.0
DEFAULT_NAME = "pushctl listen"
ALLOW_HINT = (
    "set PUSHCORE_ALLOW_PRIVATE_NETWORKS=true for local listening"
    " (for pushctl listen, and for the pushctl serve that delivers to it)"
)

Inbox = queue.Queue[dict[str, Any]]


class Receiver(ThreadingHTTPServer):
    """An HTTP server that takes JSON POSTs on one secret path and queues them."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], path: str, inbox: Inbox) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self.path = path
        self.inbox = inbox
        # The signing secret, known once the registration has answered (``registered``).
        self.secret: str | None = None
        self.registered = threading.Event()
        super().__init__(address, ReceiverHandler)


class ReceiverHandler(BaseHTTPRequestHandler):
    """Answers 200 to a JSON object POSTed to the receiver's path, then queues it."""

    server: Receiver

    def do_POST(self) -> None:
        """Take one delivery."""
        if urlsplit(self.path).path != self.server.path:
            self._answer(404)
            return
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            self._answer(411)
            return
        if not 0 <= length <= MAX_BODY:
            self._answer(413)
            return
        raw = self.rfile.read(length)
        # A delivery may come as the registration answers: wait for its secret.
        self.server.registered.wait(REGISTRATION_WAIT)
        secret = self.server.secret
        headers = {name.lower(): value for name, value in self.headers.items()}
        if secret is not None and not verify(secret, headers, raw, int(time.time())):
            output.warn("refused a POST whose webhook signature does not verify (not pushcore's)")
            self._answer(401)
            return
        try:
            payload = json.loads(raw)
        except ValueError:
            payload = None
        if not isinstance(payload, dict):
            output.warn("ignored a POST whose body is not a JSON object")
            self._answer(400)
            return
        # Answer before queueing: with --once the process may stop right after
        # printing, and the sender must have its 200 by then.
        self._answer(200)
        self.server.inbox.put(payload)

    def _answer(self, status: int) -> None:
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()
        self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: stdout is for notifications and stderr for pushctl's own diagnostics."""


def _url(host: str, port: int, path: str) -> str:
    netloc = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return f"http://{netloc}{path}"


def listen_webhook(
    api: Api, port: int, host: str, name: str, once: bool, json_output: bool
) -> None:
    """Register a local webhook device, print what it receives, remove it on exit."""
    inbox: Inbox = queue.Queue()
    # The random path keeps other local programs from posting into this listener by chance.
    receiver = Receiver((host, port), "/" + secrets.token_urlsafe(16), inbox)
    url = _url(host, receiver.server_address[1], receiver.path)
    serving = threading.Thread(
        target=receiver.serve_forever,
        # How often it looks for a shutdown request: exit promptly.
        kwargs={"poll_interval": POLL_SECONDS},
        name="pushctl-listen",
        daemon=True,
    )
    serving.start()
    try:
        device, receiver.secret = _register(api, url, name)
    except BaseException:
        receiver.shutdown()
        receiver.server_close()
        raise
    finally:
        receiver.registered.set()

    stop = threading.Event()
    restore = on_stop_signals(stop)
    try:
        output.say(
            f"Listening on {url} as webhook device {device} of {api.who}"
            + ("; exits after one notification." if once else "; Ctrl-C to stop.")
        )
        while not stop.is_set():
            try:
                payload = inbox.get(timeout=POLL_SECONDS)
            except queue.Empty:
                continue
            if json_output:
                typer.echo(json.dumps(payload, ensure_ascii=False, separators=(",", ":")))
            else:
                typer.echo(describe(payload, datetime.now(UTC)))
            if once:
                break
    except KeyboardInterrupt:
        pass  # a Ctrl-C before the handlers were in place
    finally:
        restore()
        receiver.shutdown()
        receiver.server_close()
        # Already removed by someone else: the goal is met all the same.
        with contextlib.suppress(NotFound):
            api.client.devices.remove(device)
        output.say(f"Removed device {device}.")


def _register(api: Api, url: str, name: str) -> tuple[str, str | None]:
    """Register ``url`` as a webhook device of the account; its id and signing secret."""
    try:
        registered = api.client.devices.register(Platform.WEBHOOK, url, name=name)
        return registered.id, registered.secret
    except ValidationError as error:
        # Refused as a private address: the one refusal a setting can lift.
        refused = [d for d in error.details if d.field == "token" and "private" in d.message]
        if not refused:
            raise
        output.error(f"cannot register {url} as a webhook device: the URL {refused[0].message}")
        output.say(f"hint: {ALLOW_HINT}")
        raise typer.Exit(1) from None
