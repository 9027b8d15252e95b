"""The commands, one module per resource, and what they share: settings, services, --account."""

from __future__ import annotations

import base64
import functools
import json
import logging
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import attrs
import typer

from pushcore.config import Settings, load_settings
from pushcore.services.tokens import MAX_SUBJECT_LENGTH
from pushcore_cli import output

if TYPE_CHECKING:
    # Imported where first used: `pushctl --version` and `--help` load no server code,
    # and only the account commands load the client.
    from pushcore.client import Client
    from pushcore.services import Services


class CliState:
    """The global options, and the settings and services made from them when first needed.

    Lazy so that ``--help`` works even with a broken configuration, and so
    that a command that needs no database opens none.
    """

    def __init__(
        self,
        data_dir: Path | None = None,
        config_file: Path | None = None,
        database_url: str | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.config_file = config_file
        self.database_url = database_url
        self.url: str | None = None
        self.api_key: str | None = None
        self.token: str | None = None
        # The global options given on the command line so far (before and after
        # the command name), by parameter name: see pushcore_cli.global_options.
        self.given: dict[str, object] = {}
        self._settings: Settings | None = None
        self._services: Services | None = None
        self._client: Client | None = None

    def set_option(self, name: str, value: object) -> None:
        """Set a global option by its parameter name (``data_dir``, ``config``, ``url``...)."""
        if name in ("data_dir", "config"):
            value = Path(str(value))
        setattr(self, "config_file" if name == "config" else name, value)

    @property
    def names_local_data(self) -> bool:
        """Whether --data-dir, --database-url or --config (or their variables) were given."""
        return any(v is not None for v in (self.data_dir, self.database_url, self.config_file))

    @property
    def given_credentials(self) -> bool:
        """Whether --api-key or --token (or their variables) were given."""
        return self.api_key is not None or self.token is not None

    def local(self) -> None:
        """A usage error when the command line asks for a server (``--url``): this is local."""
        if self.url is not None:
            raise typer.BadParameter(
                "this command works on the local data directory only; --url (or"
                " PUSHCORE_URL) is for the commands that act on an account's resources"
                " (keys, devices, send, notifications, streams, listen)",
                param_hint="'--url'",
            )

    @property
    def settings(self) -> Settings:
        """The settings: global options over the environment over the TOML file."""
        self.local()
        if self._settings is None:
            self._settings = load_settings(
                config_file=self.config_file,
                data_dir=self.data_dir,
                database_url=self.database_url,
            )
        return self._settings

    def build_services(self, *, server: bool = False) -> Services:
        """New services through the composition root (the caller closes them); for a
        ``server`` (serve, worker), with the shared VAPID key pair settled.

        Says so on stderr when this creates the data directory, so that a
        command run from the wrong directory is noticed.
        """
        settings = self.settings
        existed = settings.data_dir.exists()
        from pushcore.bootstrap import build_server_services, build_services

        services = (build_server_services if server else build_services)(settings)
        if not existed and settings.data_dir.exists():
            output.say(f"pushctl: created a new data directory at {settings.data_dir.resolve()}")
        return services

    @property
    def services(self) -> Services:
        """The services, built once through the composition root, closed with the command."""
        if self._services is None:
            self._services = self.build_services()
        return self._services

    def client(self, account: str | None) -> Client:
        """The client of the server at ``--url`` with the given credentials; without
        ``--url``, of the app on the local services acting as ``account``."""
        if self._client is None:
            if self.url is not None:
                self._client = self.remote_client(self.url)
            else:
                # Imported here: only local account commands need the app.
                from pushcore_cli.inprocess import local_client

                assert account is not None
                self._client = local_client(self.services, account)
        return self._client

    def remote_client(self, url: str) -> Client:
        """The client of ``url``: with the credentials given, else the session that
        ``pushctl login`` saved for it (renewed by itself), else none."""
        from pushcore.client import Client

        if self.given_credentials:
            return Client(url, api_key=self.api_key, token=self.token)
        # Imported here: the session file is only for remote commands.
        from pushcore_cli.sessions import SessionFile

        return Client(url, session=SessionFile().session(url))

    def close(self) -> None:
        """Close the services and the client if they were made."""
        if self._services is not None:
            services, self._services = self._services, None
            services.close()
        if self._client is not None:
            client, self._client = self._client, None
            client.close()


def state_of(ctx: typer.Context) -> CliState:
    """The :class:`CliState` the root callback put in the context."""
    state = ctx.find_object(CliState)
    if state is None:  # only when a command is invoked without the root group
        raise RuntimeError("pushctl commands must run under the pushctl root group")
    return state


def check_account(account: str, hint: str) -> str:
    """``account`` when it can be an account id (a JWT ``sub``); a usage error otherwise."""
    if not 0 < len(account) <= MAX_SUBJECT_LENGTH:
        raise typer.BadParameter(
            f"an account id has 1 to {MAX_SUBJECT_LENGTH} characters", param_hint=hint
        )
    return account


# An engine beats every 2 s; 10 s without one is API.md's "not seen working".
ENGINE_SILENCE = timedelta(seconds=10)


@attrs.frozen
class Api:
    """What an account command works on: :attr:`client`, the one interface of both modes."""

    connect: Callable[[], Client]
    """Makes (once) the client: locally, the HTTP app in this process, which a local
    send does without (pushcore_cli/local_send.py)."""
    who: str
    """``alice``, or who the credentials are (remote)."""
    as_account: str
    """`` --account alice`` to repeat in hints, or ``""`` (remote: the credentials say)."""
    local: Services | None = None
    """Local mode: the services, for what only they can tell (never what the API says)."""
    account: str | None = None
    """Local mode: the account acted as."""

    @property
    def client(self) -> Client:
        """The client: of the server at ``--url``, or of the app on the local services."""
        return self.connect()

    def warn_without_engine(self) -> None:
        """Warn (local mode) when no delivery engine works the database: sends would wait."""
        if self.local is not None and not self.local.engine_seen_since(ENGINE_SILENCE):
            output.warn(
                "no delivery engine (pushctl serve or pushctl worker) has been seen working on"
                " this database in the last 10 seconds: nothing is delivered until one runs."
            )


def remote_who(client: Client, url: str, api_key: str | None, token: str | None) -> str:
    """Who a remote command acts as, in words: the account where the credential says."""
    account = client.session.tokens.account if client.session is not None else None
    if account is None and token is not None and api_key is None:
        account = unverified_subject(token)
    if account is not None:
        return f"account {account} at {url}"
    if api_key is not None:
        return f"the account of key {api_key[:12]}... at {url}"
    return f"the account of the credentials at {url}"


def unverified_subject(token: str) -> str | None:
    """A JWT's ``sub``, read without checking it: only to name whom a command acts as
    (the server checks the token itself)."""
    try:
        payload = token.split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (IndexError, ValueError):
        return None
    subject = claims.get("sub") if isinstance(claims, dict) else None
    return subject if isinstance(subject, str) else None


def api_for(ctx: typer.Context, account: str | None) -> Api:
    """What an account command works on: with ``--url``, that server as the credentials'
    account; otherwise the local services acting as ``account`` (created on the free
    plan if it has never been seen)."""
    state = state_of(ctx)
    if state.url is None and account is None and not state.names_local_data:
        # Signed in with `pushctl login`: that server, until `pushctl logout`.
        from pushcore_cli.sessions import SessionFile

        state.url = SessionFile().current()
    if state.url is not None:
        if account is not None:
            raise typer.BadParameter(
                "not with --url: the account is the one of the credentials (--api-key, --token)",
                param_hint="'--account'",
            )
        client = state.client(None)
        who = remote_who(client, state.url, state.api_key, state.token)
        return Api(functools.partial(state.client, None), who, "")
    if account is None:
        hint = " (--api-key and --token take effect with --url)" if state.given_credentials else ""
        raise typer.BadParameter(
            f"missing: the account to act as (with --url, the credentials' account){hint}",
            param_hint="'--account'",
        )
    check_account(account, "'--account'")
    services = state.services
    services.accounts.ensure(account)
    connect = functools.partial(state.client, account)
    return Api(connect, account, f" --account {account}", services, account)


AccountOption = Annotated[
    str | None,
    typer.Option(
        "--account",
        "-a",
        help="The account to act as (the JWT subject); created on first use. Required,"
        " except with --url, where the account is the credentials' own.",
        metavar="ACCOUNT",
        show_default=False,
    ),
]


def configure_logging(level: str) -> None:
    """pushcore's own log lines (a generated secret, an unconfigured gateway) on stderr,
    in the shape uvicorn prints its own, for the long-running commands."""
    logging.basicConfig(level=level.upper(), format="%(levelname)s:     %(name)s: %(message)s")
