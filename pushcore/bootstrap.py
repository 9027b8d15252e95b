"""The composition root: the one place where ports meet their adapters.

``build_services`` is used by the HTTP app, by every CLI command and by the
tests (with fakes passed as overrides). Nothing is built at import time.

The delivery engine, the gateways (aiohttp, h2, the platforms' key handling) and
the OpenID provider (Authlib) are imported by the functions that build them:
a command that only sends (a local ``pushctl send``) needs none of them, and
they are most of what importing the root would cost (docs/benchmarks.md,
"Quick start").
"""

from __future__ import annotations

import base64
import functools
import logging
import os
import secrets
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from pushcore.config import Settings, retry_policy
from pushcore.domain.errors import ConfigError
from pushcore.domain.model import Platform
from pushcore.gateways.checks import CheckableGateway, PlatformSetup
from pushcore.live import LiveHub
from pushcore.live.hub import Watch
from pushcore.outbound.guard import NetworkGuard, tls_context
from pushcore.outbound.icons import HttpIconProbe
from pushcore.ports import (
    Clock,
    Gateway,
    IconProbe,
    IdentityProvider,
    IdGenerator,
    Random,
    Store,
    Writes,
)
from pushcore.runtime.datadir import VAPID_KEY_FILE, secure_data_dir, sqlite_path
from pushcore.runtime.system import MillisecondClock, SecretsRandom, SystemClock, UlidGenerator
from pushcore.services import (
    AccountService,
    AuthService,
    DeviceService,
    IdempotencyService,
    InboxService,
    KeyService,
    Later,
    NotificationService,
    Services,
    StreamService,
    TokenIssuer,
    TokenVerifier,
    WakeRelay,
)
from pushcore.services.auth import KeyCache
from pushcore.services.passwords import PasswordHashing
from pushcore.services.revocations import SignedOut
from pushcore.services.tokens import JwksSource
from pushcore.storage import POSTGRES_SCHEMES, open_store
from pushcore.storage.group import GroupWriter

if TYPE_CHECKING:
    import ssl

    import httpx

    from pushcore.delivery import DeliveryEngine
    from pushcore.metrics import Metrics
    from pushcore.outbound.oidc import OidcProvider
    from pushcore.services.people import PeopleService
    from pushcore.services.receipts import ReceiptService
    from pushcore.services.recipient import RecipientService
    from pushcore.services.replacements import ReplacementService
    from pushcore.services.schedules import ScheduleService
    from pushcore.services.sessions import SessionService
    from pushcore.services.webhooks import WebhookService

log = logging.getLogger("pushcore")

JWT_SECRET_FILE = "jwt-secret"  # noqa: S105  (a file name, not a secret)


def ensure_jwt_secret(data_dir: Path) -> str:
    """The HS256 secret in the data directory, generated (mode 0600) on first run."""
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / JWT_SECRET_FILE
    secret = base64.urlsafe_b64encode(secrets.token_bytes(32)).decode().rstrip("=")
    try:
        # O_EXCL: when two processes start at once, exactly one writes the secret.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text(encoding="utf-8").strip()
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(secret + "\n")
    log.info("generated a JWT secret in %s", path)
    return secret


def build_token_issuer(settings: Settings, clock: Clock | None = None) -> TokenIssuer:
    """What `pushctl token issue` signs with: PUSHCORE_JWT_SECRET, or the secret in an
    existing data directory. Never a new directory or secret (a server would not know
    it), and never a database: a token needs only the secret."""
    secret = settings.jwt_secret
    if secret is None and not settings.jwks:
        if not settings.data_dir.is_dir():
            raise ConfigError(
                f"PUSHCORE_DATA_DIR: there is no data directory at {settings.data_dir}, so no"
                " secret to sign with that a server knows: run this where the server's data"
                " directory is (or give --data-dir), or set PUSHCORE_JWT_SECRET"
            )
        secret = ensure_jwt_secret(settings.data_dir)
    return TokenIssuer(clock or SystemClock(), secret)


def _icon_client(tls: ssl.SSLContext) -> httpx.AsyncClient:
    # httpx is imported by the first icon check, not by every command (a local send).
    import httpx

    return httpx.AsyncClient(timeout=httpx.Timeout(3.0), verify=tls, trust_env=False)


def build_services(
    settings: Settings,
    *,
    store: Store | None = None,
    clock: Clock | None = None,
    ids: IdGenerator | None = None,
    random: Random | None = None,
    guard: NetworkGuard | None = None,
    icons: IconProbe | None = None,
    identity_provider: IdentityProvider | None = None,
) -> Services:
    """Wire the services for ``settings``; any port may be overridden (tests pass fakes)."""
    clock = clock or SystemClock()
    # What the services stamp on what they create, as the stores keep it.
    stamps = MillisecondClock(clock)
    ids = ids or UlidGenerator()
    random = random or SecretsRandom()
    guard = guard or NetworkGuard(allow_private=settings.allow_private_networks)
    # Before anything is created there, so that everything is created private.
    database = None if store is not None else sqlite_path(settings.effective_database_url)
    secure_data_dir(settings.data_dir, database, (JWT_SECRET_FILE, VAPID_KEY_FILE))
    store = store or open_store(settings.effective_database_url, settings.database_pool_size)
    if icons is None:
        # Loading the trusted roots costs ~50 ms: paid by the first icon check, not by
        # every command (a server's gateways load them at its start, so a bad
        # PUSHCORE_CA_FILE still stops `serve`).
        tls = functools.cache(lambda: tls_context(settings.ca_file))
        icons = HttpIconProbe(
            guard,
            lambda: _icon_client(tls()),
            total=settings.icon_checks,
            per_account=settings.icon_checks_per_account,
        )
    wakes = WakeRelay()
    signed_out = SignedOut(store, clock)
    live = LiveHub(
        store, stamps, watch=_inbox_watch(settings.effective_database_url), signed_out=signed_out
    )
    writes = GroupWriter(store)
    notifications = NotificationService(store, writes, stamps, ids, icons, wakes)

    jwks = JwksSource(settings.jwks, settings.ca_file) if settings.jwks else None
    # pushcore signs its sessions' access tokens itself, beside a JWKS too.
    secret = settings.jwt_secret or ensure_jwt_secret(settings.data_dir)
    verifier = TokenVerifier(
        clock,
        settings.effective_jwt_algorithms,
        secret=secret,
        jwks=jwks,
        issuer=settings.jwt_issuer,
        audience=settings.jwt_audience,
    )
    accounts = AccountService(store, stamps)
    key_cache = KeyCache()
    sessions = Later(
        lambda: _sessions(
            store,
            stamps,
            ids,
            secrets.token_bytes,
            TokenIssuer(clock, secret),
            settings.access_token_ttl,
            settings.refresh_token_ttl,
            signed_out,
        )
    )
    passwords = PasswordHashing()
    oidc = None
    if settings.oidc_enabled:
        from pushcore.services.oidc import OidcService

        oidc = OidcService(
            store, stamps, random, identity_provider or build_identity_provider(settings, clock),
            sessions.get(), settings.oidc_account_claim,
        )  # fmt: skip
    return Services(
        settings=settings,
        store=store,
        writes=writes,
        clock=clock,
        accounts=accounts,
        auth=AuthService(store, writes, clock, verifier, accounts, signed_out, key_cache),
        keys=KeyService(store, stamps, ids, random, key_cache),
        devices=DeviceService(store, stamps, ids, guard, wakes, random),
        idempotency=IdempotencyService(store, clock),
        notifications=notifications,
        streams=StreamService(store, stamps, ids, random, icons, wakes, live),
        inbox=InboxService(store, stamps, live),
        replacements=Later(
            lambda: _replacements(store, writes, stamps, ids, icons, wakes, live, notifications)
        ),
        live=live,
        # With a JWKS, tokens for the API come from the identity provider or a sign-in.
        tokens=TokenIssuer(clock, None if jwks else secret),
        sessions=sessions,
        oidc=oidc,
        people=Later(lambda: _people(store, stamps, passwords, sessions.get(), settings.signup)),
        passwords=passwords,
        wakes=wakes,
        webhooks=Later(lambda: _webhooks(store, stamps, ids, random, guard)),
        schedules=Later(lambda: _schedules(store, writes, stamps, ids, notifications, wakes, live)),
        receipts=Later(lambda: _receipts(store, clock)),
        # Generated on first use, so a web client can subscribe before Web Push
        # delivery is configured; servers ask at their start (build_engine, the
        # app's lifespan).
        vapid_key=functools.cache(lambda: _vapid_public_key(settings.data_dir, store, clock)),
        recipients=Later(lambda: _recipients(store, stamps, wakes)),
    )


# The services a local command rarely runs, made on their first use with their modules
# imported then (a local send loads none of them: docs/benchmarks.md, "Quick start").


def _replacements(*parts: Any) -> ReplacementService:
    from pushcore.services.replacements import ReplacementService

    return ReplacementService(*parts)


def _sessions(*parts: Any) -> SessionService:
    from pushcore.services.sessions import SessionService

    return SessionService(*parts)


def _people(*parts: Any) -> PeopleService:
    from pushcore.services.people import PeopleService

    return PeopleService(*parts)


def _webhooks(*parts: Any) -> WebhookService:
    from pushcore.services.webhooks import WebhookService

    return WebhookService(*parts)


def _schedules(
    store: Store,
    writes: Writes,
    stamps: Clock,
    ids: IdGenerator,
    notifications: NotificationService,
    wakes: WakeRelay,
    live: LiveHub,
) -> ScheduleService:
    from pushcore.converter.schedules import TemplateReader
    from pushcore.recurrence.dateutil_rules import DateutilExpander
    from pushcore.services.occurrences import Maker
    from pushcore.services.schedules import ScheduleService

    expander, templates = DateutilExpander(), TemplateReader()
    maker = Maker(store, stamps, ids, expander, templates, notifications, wakes, live)
    return ScheduleService(store, writes, stamps, ids, expander, templates, maker)


def _receipts(store: Store, clock: Clock) -> ReceiptService:
    from pushcore.receipts import ReceiptKey
    from pushcore.services.receipts import ReceiptService

    return ReceiptService(store, clock, ReceiptKey(store, clock))


def _recipients(*parts: Any) -> RecipientService:
    from pushcore.services.recipient import RecipientService

    return RecipientService(*parts)


def build_server_services(settings: Settings) -> Services:
    """:func:`build_services` for a process that serves or delivers (``pushctl serve``,
    ``worker``): the VAPID key pair it shares with the database is settled before
    it starts, so a data directory holding another pair stops it with a ConfigError."""
    services = build_services(settings)
    try:
        services.vapid_key()
    except BaseException:
        services.close()
        raise
    # A child process cannot share a memory:// database.
    apart = settings.events_process and not settings.effective_database_url.startswith("memory:")
    return attrs.evolve(services, events_apart=apart)


def _vapid_public_key(data_dir: Path, store: Store, clock: Clock) -> str:
    # Imported here: its key handling (cryptography) is for servers and web devices.
    from pushcore.gateways.vapid import shared_vapid_key

    return shared_vapid_key(data_dir, store, clock).public_key_b64url


def build_identity_provider(settings: Settings, clock: Clock) -> OidcProvider:
    """The OpenID provider of single sign-on (PUSHCORE_OIDC_*); settings validated."""
    from pushcore.outbound.oidc import OidcProvider

    issuer, client_id = settings.oidc_issuer, settings.oidc_client_id
    secret = settings.oidc_client_secret
    if not (issuer and client_id and secret):
        raise ConfigError("PUSHCORE_OIDC_ISSUER: single sign-on is not configured")
    from pushcore.domain.oidc import CALLBACK_PATH

    redirect_uri = settings.public_base + CALLBACK_PATH
    log.info("single sign-on with %s; redirect URI %s", issuer, redirect_uri)
    return OidcProvider(
        issuer, client_id, secret, redirect_uri, clock, tls_context(settings.ca_file)
    )


def _inbox_watch(url: str) -> Watch | None:
    """How live channels hear of entries other processes commit: PostgreSQL's
    LISTEN; None (the hub polls the latest entry's number) on SQLite."""
    if not url.startswith(POSTGRES_SCHEMES):
        return None
    from pushcore.storage.postgres.listen import inbox_watch

    return inbox_watch(url)


def build_gateways(settings: Settings, clock: Clock) -> dict[Platform, Gateway]:
    """A gateway per platform: webhook and live always; the others log and fail until
    configured.

    Configured credentials that do not load stop the start with a ConfigError
    naming the setting.
    """
    try:
        return _build_gateways(settings, clock)
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc


def _apns(settings: Settings, clock: Clock) -> CheckableGateway:
    from pushcore.gateways.apns import ApnsGateway

    return ApnsGateway.from_settings(settings, clock)


def _fcm(settings: Settings, clock: Clock) -> CheckableGateway:
    from pushcore.gateways.fcm import FcmGateway

    return FcmGateway.from_settings(settings, clock)


def _web_push(settings: Settings, clock: Clock) -> CheckableGateway:
    from pushcore.gateways.webpush import WebPushGateway

    return WebPushGateway.from_settings(settings, clock)


# The one decision of whether each platform is configured: the engine's
# gateways and `pushctl gateways` both read it, so they cannot disagree.
# Webhooks and live devices need no credentials and are always on.
PLATFORMS: tuple[PlatformSetup, ...] = (
    PlatformSetup(
        Platform.IOS,
        "APNs",
        "PUSHCORE_APNS_KEY_FILE, _KEY_ID, _TEAM_ID, _TOPIC",
        lambda s: s.apns_key_file is not None,
        _apns,
    ),
    PlatformSetup(
        Platform.ANDROID,
        "FCM",
        "PUSHCORE_FCM_SERVICE_ACCOUNT_FILE",
        lambda s: s.fcm_service_account_file is not None,
        _fcm,
    ),
    PlatformSetup(
        Platform.WEB,
        "Web Push",
        "PUSHCORE_VAPID_SUBJECT",
        lambda s: bool(s.vapid_subject),
        _web_push,
    ),
)


def _build_gateways(settings: Settings, clock: Clock) -> dict[Platform, Gateway]:
    from pushcore.gateways.live import LiveGateway
    from pushcore.gateways.log import LogGateway
    from pushcore.gateways.webhook import WebhookGateway

    guard = NetworkGuard(allow_private=settings.allow_private_networks)
    webhook = WebhookGateway(
        guard,
        clock,
        tls=tls_context(settings.ca_file),
        host_concurrency=settings.webhook_host_concurrency,
    )
    # Live devices are reached through the inbox, written before any send.
    gateways: dict[Platform, Gateway] = {Platform.WEBHOOK: webhook, Platform.LIVE: LiveGateway()}
    for setup in PLATFORMS:
        if setup.configured(settings):
            gateways[setup.platform] = setup.build(settings, clock)
        else:
            reason = setup.missing()
            log.warning("%s: deliveries to %s devices will fail", reason, setup.platform.value)
            gateways[setup.platform] = LogGateway(reason)
    return gateways


def build_metrics(services: Services) -> Metrics:
    """The Prometheus metrics of one server: the HTTP app and its engine share them."""
    # Imported here: only the server needs prometheus_client, not every pushctl command.
    from pushcore.metrics import Metrics

    return Metrics(services.store, services.clock, services.live)


def build_engine(
    services: Services,
    gateways: dict[Platform, Gateway] | None = None,
    owner: str | None = None,
    metrics: Metrics | None = None,
) -> DeliveryEngine:
    """The delivery engine for ``services``, registered to receive their wake-ups;
    with ``metrics``, it reports outcomes there and its gateway sends are timed."""
    from pushcore.delivery import DeliveryEngine, EngineConfig
    from pushcore.delivery.config import new_owner
    from pushcore.delivery.event_process import EventProcess
    from pushcore.delivery.recurring import Materialiser
    from pushcore.delivery.retention import Retention, RetentionConfig
    from pushcore.delivery.webhooks import EventSender

    settings = services.settings
    # The data directory holds the pair every process shares before Web Push loads it.
    services.vapid_key()
    config = EngineConfig(
        batch_size=settings.delivery_batch_size,
        lease=timedelta(seconds=settings.delivery_lease_seconds),
        # Several beats within half a lease: a lease is renewed once half of it is left.
        heartbeat=min(timedelta(seconds=2), timedelta(seconds=settings.delivery_lease_seconds) / 5),
        tick=settings.scheduler_tick_seconds,
        lead=timedelta(seconds=settings.scheduler_lead_seconds),
        burst_lead=timedelta(seconds=settings.scheduler_burst_lead_seconds),
        max_in_flight=settings.delivery_max_in_flight,
        retry=retry_policy(settings),
    )
    if gateways is None:
        gateways = build_gateways(settings, services.clock)
    if metrics is not None:
        gateways = metrics.timed(gateways)
    retention = Retention(
        services.store, services.clock, RetentionConfig(keep=settings.retention), services.live
    )
    owner = owner or new_owner()
    events: EventSender | EventProcess
    if services.events_apart:  # posted from a child process: delivery/event_process.py
        events = EventProcess(settings, services.store)
    else:
        events = EventSender(
            services.store,
            services.clock,
            NetworkGuard(allow_private=settings.allow_private_networks),
            owner,
            tls=tls_context(settings.ca_file),
        )
    engine = DeliveryEngine(
        services.store,
        services.clock,
        gateways,
        config,
        owner,
        observer=metrics,
        retention=retention,
        inbox=services.live,
        events=events,
        schedules=Materialiser(services.schedules.maker, services.clock),
    )
    if metrics is not None:
        metrics.watch_engine(engine)
    services.wakes.engine = engine
    return engine
