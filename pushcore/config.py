"""Settings from the environment (``PUSHCORE_*``) and an optional TOML file, validated once.

Every setting has a default that works for the embedded case (SQLite in
``./data``). The environment wins over the file. An invalid value fails at
start with a message that names the environment variable.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from datetime import timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import attrs

from pushcore.domain.errors import ConfigError
from pushcore.domain.retry import RetryPolicy

# A retry schedule needing more tries than this is a misconfiguration.
MAX_TRIES = 1000
HS_ALGORITHMS = frozenset({"HS256", "HS384", "HS512"})
ASYMMETRIC_ALGORITHMS = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)


@attrs.frozen
class Settings:
    """Everything configurable. Build with :func:`load_settings`."""

    data_dir: Path = Path("data")
    database_url: str | None = None
    database_pool_size: int = 10
    config_file: Path | None = None
    host: str = "127.0.0.1"
    port: int = 8080
    log_level: str = "info"
    access_log: bool = False
    jwt_secret: str | None = None
    jwks: str | None = None
    jwt_algorithms: tuple[str, ...] = ()
    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    allow_private_networks: bool = False
    # Sessions of people who sign in (POST /api/auth/login).
    signup: bool = False
    access_token_ttl: timedelta = timedelta(minutes=15)
    refresh_token_ttl: timedelta = timedelta(days=30)
    ca_file: Path | None = None
    apns_key_file: Path | None = None
    apns_key_id: str | None = None
    apns_team_id: str | None = None
    apns_topic: str | None = None
    apns_environment: str = "production"
    apns_url: str | None = None
    fcm_service_account_file: Path | None = None
    fcm_url: str = "https://fcm.googleapis.com"
    vapid_subject: str | None = None
    retry_max_attempts: int = 5
    retry_max_age: timedelta = timedelta(hours=1)
    retry_min_delay: timedelta = timedelta(seconds=1)
    retry_max_delay: timedelta = timedelta(minutes=10)
    webhook_host_concurrency: int = 16
    # `pushctl serve` and `worker` post event webhooks from a process of their own.
    events_process: bool = True
    delivery_lease_seconds: int = 30
    delivery_batch_size: int = 256
    delivery_max_in_flight: int = 8192
    scheduler_tick_seconds: float = 1.0
    scheduler_lead_seconds: float = 0.02
    # On (1 s) unless set to 0: see pushcore/delivery/lead.py for what it costs.
    scheduler_burst_lead_seconds: float = 1.0
    # Settled notifications older than this are deleted; 0 keeps everything.
    retention: timedelta = timedelta(days=30)
    rate_limit: int = 100
    rate_limit_burst: int = 500
    icon_checks: int = 32
    icon_checks_per_account: int = 4
    # A request head must arrive within this (from the connection's opening or the
    # head's first byte), a body make progress within the other; else it is closed.
    http_head_timeout: timedelta = timedelta(seconds=10)
    http_body_timeout: timedelta = timedelta(seconds=30)
    # Client connections open at once; 0: derived from the open-files limit.
    http_max_connections: int = 0
    # A response whose client takes none of its bytes for this long is closed.
    http_write_timeout: timedelta = timedelta(seconds=30)
    # Live channels open at once in a process; 0: derived from the connection bound.
    live_max_channels: int = 0
    # Where people reach this server: scheme, host and any path prefix a proxy adds.
    # Single sign-on needs it for its redirect URI (PUBLIC_URL/api/auth/oidc/callback):
    # a request's own Host and scheme are the client's to say, and a proxy changes them.
    public_url: str | None = None
    # Single sign-on (OpenID Connect): on when the issuer, client id and secret are set.
    oidc_issuer: str | None = None
    oidc_client_id: str | None = None
    oidc_client_secret: str | None = attrs.field(default=None, repr=False)
    oidc_name: str = "Single sign-on"
    oidc_account_claim: str = "preferred_username"

    @property
    def effective_database_url(self) -> str:
        """The database URL, defaulting to the SQLite file in the data directory."""
        return self.database_url or f"sqlite:///{self.data_dir / 'pushcore.db'}"

    @property
    def oidc_enabled(self) -> bool:
        """Whether single sign-on is configured (issuer, client id and secret)."""
        return bool(self.oidc_issuer and self.oidc_client_id and self.oidc_client_secret)

    @property
    def public_base(self) -> str:
        """PUSHCORE_PUBLIC_URL without its trailing slash ("" when unset)."""
        return (self.public_url or "").rstrip("/")

    @property
    def effective_jwt_algorithms(self) -> tuple[str, ...]:
        """The accepted JWT algorithms: configured, or HS256 / RS256+ES256 by key kind."""
        if self.jwt_algorithms:
            return self.jwt_algorithms
        return ("RS256", "ES256") if self.jwks else ("HS256",)


def _env_name(field: str) -> str:
    return f"PUSHCORE_{field.upper()}"


def _convert(field: attrs.Attribute[Any], raw: Any) -> Any:
    name = _env_name(field.name)
    kind = str(field.type)  # annotations are strings here (from __future__)
    if raw is None or raw == "":
        return None if "None" in kind else field.default
    if kind == "bool":
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off"):
            return False
        raise ConfigError(f"{name}: must be true or false, not {raw!r}")
    if kind == "int":
        try:
            return int(raw)
        except (TypeError, ValueError):
            raise ConfigError(f"{name}: must be an integer, not {raw!r}") from None
    if kind == "float":
        try:
            return float(raw)
        except (TypeError, ValueError):
            raise ConfigError(f"{name}: must be a number, not {raw!r}") from None
    if kind == "timedelta":
        return _duration(name, raw)
    if kind == "tuple[str, ...]":
        items = raw if isinstance(raw, list) else str(raw).replace(",", " ").split()
        return tuple(str(i) for i in items)
    if "Path" in kind:
        return Path(str(raw)).expanduser()
    return str(raw)


_SECONDS_PER_UNIT = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400}
# Bounded digits: no duration a setting needs is longer, and float() of a
# huge literal would only overflow later.
_DURATION = re.compile(r"([0-9]{1,9}(?:\.[0-9]{1,6})?)(ms|s|m|h|d)?")


def _duration(name: str, raw: Any) -> timedelta:
    """``1h``, ``10m``, ``30s``, ``500ms``, ``7d`` or a number of seconds."""
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        raw = str(raw)
    match = _DURATION.fullmatch(str(raw).strip())
    if match is None:
        raise ConfigError(f"{name}: must be a duration such as 30s, 10m or 1h, not {raw!r}")
    number, unit = match.groups()
    return timedelta(seconds=float(number) * _SECONDS_PER_UNIT[unit or "s"])


def load_settings(
    env: Mapping[str, str] | None = None,
    config_file: Path | None = None,
    **overrides: Any,
) -> Settings:
    """Settings from ``overrides`` > environment > TOML file > defaults, validated."""
    env = os.environ if env is None else env
    config_file = config_file or (
        Path(env["PUSHCORE_CONFIG"]) if env.get("PUSHCORE_CONFIG") else None
    )
    from_file: dict[str, Any] = {}
    if config_file is not None:
        try:
            from_file = tomllib.loads(config_file.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(
                f"PUSHCORE_CONFIG: cannot read {config_file}: {exc.strerror}"
            ) from None
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"PUSHCORE_CONFIG: {config_file} is not valid TOML: {exc}") from None
    fields = {f.name: f for f in attrs.fields(Settings)}
    unknown = sorted(set(from_file) - set(fields))
    if unknown:
        raise ConfigError(f"PUSHCORE_CONFIG: unknown setting {unknown[0]!r} in {config_file}")
    values: dict[str, Any] = {"config_file": config_file}
    for name, field in fields.items():
        if name == "config_file":
            continue
        raw: Any = from_file.get(name)
        if _env_name(name) in env:
            raw = env[_env_name(name)]
        if name in overrides and overrides[name] is not None:
            raw = overrides[name]
        if raw is not None:
            values[name] = _convert(field, raw)
    settings = _with_vapid_subject(Settings(**values))
    validate(settings)
    return settings


def _with_vapid_subject(settings: Settings) -> Settings:
    """PUSHCORE_VAPID_SUBJECT defaults to PUSHCORE_PUBLIC_URL when that is https.

    Push services want a way to reach the operator, and the server's own https
    address is one (RFC 8292); an http one is not accepted as a subject.
    """
    if settings.vapid_subject or not settings.public_base.startswith("https://"):
        return settings
    return attrs.evolve(settings, vapid_subject=settings.public_base)


def validate(settings: Settings) -> None:
    """Raise ConfigError naming the first setting that is wrong."""
    if not 0 <= settings.port <= 65535:
        raise ConfigError("PUSHCORE_PORT: must be from 0 to 65535")
    url = settings.effective_database_url
    if not url.startswith(("sqlite:///", "memory:", "postgresql://", "postgres://")):
        raise ConfigError(
            "PUSHCORE_DATABASE_URL: must start with sqlite:///, postgresql:// or memory://"
        )
    if not 1 <= settings.database_pool_size <= 1000:
        raise ConfigError("PUSHCORE_DATABASE_POOL_SIZE: must be from 1 to 1000")
    if settings.jwt_secret and settings.jwks:
        raise ConfigError("PUSHCORE_JWKS: set PUSHCORE_JWT_SECRET or PUSHCORE_JWKS, not both")
    if settings.jwt_secret is not None and len(settings.jwt_secret) < 32:
        raise ConfigError("PUSHCORE_JWT_SECRET: must be at least 32 characters")
    algorithms = set(settings.effective_jwt_algorithms)
    allowed = ASYMMETRIC_ALGORITHMS if settings.jwks else HS_ALGORITHMS
    wrong = sorted(algorithms - allowed)
    if wrong:
        kind = "a JWKS (asymmetric keys)" if settings.jwks else "a shared secret (HS*)"
        raise ConfigError(f"PUSHCORE_JWT_ALGORITHMS: {', '.join(wrong)} cannot be used with {kind}")
    _validate_delivery(settings)
    _validate_limits(settings)
    _validate_sessions(settings)
    _validate_oidc(settings)
    if settings.vapid_subject and not settings.vapid_subject.startswith(("mailto:", "https://")):
        raise ConfigError("PUSHCORE_VAPID_SUBJECT: must be a mailto: or https: contact")
    if settings.apns_environment not in ("production", "sandbox"):
        raise ConfigError("PUSHCORE_APNS_ENVIRONMENT: must be production or sandbox")
    if settings.log_level.lower() not in ("critical", "error", "warning", "info", "debug"):
        raise ConfigError(
            "PUSHCORE_LOG_LEVEL: must be one of critical, error, warning, info, debug"
        )
    for name in ("ca_file", "apns_key_file", "fcm_service_account_file"):
        path = getattr(settings, name)
        if path is not None and not path.is_file():
            raise ConfigError(f"{_env_name(name)}: no such file: {path}")
    is_url = settings.jwks is not None and settings.jwks.startswith(("https://", "http://"))
    if settings.jwks and not is_url and not Path(settings.jwks).is_file():
        raise ConfigError(f"PUSHCORE_JWKS: no such file: {settings.jwks}")


def _validate_delivery(settings: Settings) -> None:
    if not 1 <= settings.retry_max_attempts <= 1000:
        raise ConfigError("PUSHCORE_RETRY_MAX_ATTEMPTS: must be from 1 to 1000")
    if not timedelta(0) <= settings.retry_max_age <= timedelta(days=7):
        raise ConfigError("PUSHCORE_RETRY_MAX_AGE: must be from 0 to 7d")
    if not timedelta(milliseconds=100) <= settings.retry_min_delay <= timedelta(hours=1):
        raise ConfigError("PUSHCORE_RETRY_MIN_DELAY: must be from 100ms to 1h")
    if not settings.retry_min_delay <= settings.retry_max_delay <= timedelta(days=1):
        raise ConfigError("PUSHCORE_RETRY_MAX_DELAY: must be from PUSHCORE_RETRY_MIN_DELAY to 1d")
    if retry_policy(settings).attempt_limit > MAX_TRIES:
        raise ConfigError(
            f"PUSHCORE_RETRY_MAX_AGE: would take more than {MAX_TRIES} tries;"
            " raise PUSHCORE_RETRY_MAX_DELAY or lower the age"
        )
    if not 1 <= settings.webhook_host_concurrency <= 1024:
        raise ConfigError("PUSHCORE_WEBHOOK_HOST_CONCURRENCY: must be from 1 to 1024")
    if settings.delivery_lease_seconds < 5:
        raise ConfigError("PUSHCORE_DELIVERY_LEASE_SECONDS: must be at least 5")
    if not 1 <= settings.delivery_batch_size <= 10_000:
        raise ConfigError("PUSHCORE_DELIVERY_BATCH_SIZE: must be from 1 to 10000")
    if not settings.delivery_batch_size <= settings.delivery_max_in_flight <= 100_000:
        raise ConfigError(
            "PUSHCORE_DELIVERY_MAX_IN_FLIGHT: must be from PUSHCORE_DELIVERY_BATCH_SIZE to 100000"
        )
    if not 0.01 <= settings.scheduler_tick_seconds <= 60:
        raise ConfigError("PUSHCORE_SCHEDULER_TICK_SECONDS: must be from 0.01 to 60")
    if not 0 <= settings.scheduler_lead_seconds <= 1:
        raise ConfigError("PUSHCORE_SCHEDULER_LEAD_SECONDS: must be from 0 to 1")
    if not 0 <= settings.scheduler_burst_lead_seconds <= 5:
        raise ConfigError("PUSHCORE_SCHEDULER_BURST_LEAD_SECONDS: must be from 0 to 5")


def _validate_limits(settings: Settings) -> None:
    if settings.rate_limit < 0:
        raise ConfigError("PUSHCORE_RATE_LIMIT: must be 0 (off) or more")
    if settings.rate_limit_burst < 1:
        raise ConfigError("PUSHCORE_RATE_LIMIT_BURST: must be at least 1")
    if settings.icon_checks < 1:
        raise ConfigError("PUSHCORE_ICON_CHECKS: must be at least 1")
    if not 1 <= settings.icon_checks_per_account <= settings.icon_checks:
        raise ConfigError(
            "PUSHCORE_ICON_CHECKS_PER_ACCOUNT: must be from 1 to PUSHCORE_ICON_CHECKS"
        )
    _validate_http(settings)


def _validate_sessions(settings: Settings) -> None:
    if not timedelta(minutes=1) <= settings.access_token_ttl <= timedelta(days=1):
        raise ConfigError("PUSHCORE_ACCESS_TOKEN_TTL: must be from 1m to 1d")
    if not settings.access_token_ttl < settings.refresh_token_ttl <= timedelta(days=365):
        raise ConfigError(
            "PUSHCORE_REFRESH_TOKEN_TTL: must be longer than PUSHCORE_ACCESS_TOKEN_TTL, up to 365d"
        )


def _validate_http(settings: Settings) -> None:
    if not timedelta(milliseconds=100) <= settings.http_head_timeout <= timedelta(minutes=10):
        raise ConfigError("PUSHCORE_HTTP_HEAD_TIMEOUT: must be from 100ms to 10m")
    if not timedelta(milliseconds=100) <= settings.http_body_timeout <= timedelta(hours=1):
        raise ConfigError("PUSHCORE_HTTP_BODY_TIMEOUT: must be from 100ms to 1h")
    if not (settings.http_max_connections == 0 or settings.http_max_connections >= 2):
        raise ConfigError(
            "PUSHCORE_HTTP_MAX_CONNECTIONS: must be 0 (from the open-files limit) or at least 2"
        )
    if not timedelta(milliseconds=100) <= settings.http_write_timeout <= timedelta(hours=1):
        raise ConfigError("PUSHCORE_HTTP_WRITE_TIMEOUT: must be from 100ms to 1h")
    if settings.live_max_channels < 0:
        raise ConfigError(
            "PUSHCORE_LIVE_MAX_CHANNELS: must be 0 (from the connection bound) or more"
        )


def _validate_oidc(settings: Settings) -> None:
    if settings.public_url is not None:
        parts = urlsplit(settings.public_url)
        if (
            parts.scheme not in ("https", "http")
            or not parts.hostname
            or parts.query
            or parts.fragment
            or "@" in parts.netloc
        ):
            raise ConfigError(
                "PUSHCORE_PUBLIC_URL: must be an http(s) URL without a query or fragment,"
                " such as https://push.example.com"
            )
    names = ("oidc_issuer", "oidc_client_id", "oidc_client_secret")
    missing = [name for name in names if not getattr(settings, name)]
    if len(missing) == len(names):
        return
    if missing:
        raise ConfigError(
            f"{_env_name(missing[0])}: single sign-on needs PUSHCORE_OIDC_ISSUER,"
            " PUSHCORE_OIDC_CLIENT_ID and PUSHCORE_OIDC_CLIENT_SECRET together"
        )
    # Single sign-on's rules load only where it is configured.
    from pushcore.domain.oidc import is_secure_url

    if not is_secure_url(settings.oidc_issuer or ""):
        raise ConfigError(
            "PUSHCORE_OIDC_ISSUER: must be an https:// URL (http:// only on a loopback host,"
            " for trying things out)"
        )
    if settings.public_url is None:
        raise ConfigError(
            "PUSHCORE_PUBLIC_URL: single sign-on needs it: the provider sends people back to"
            " PUBLIC_URL/api/auth/oidc/callback"
        )
    if not settings.oidc_account_claim.strip():
        raise ConfigError("PUSHCORE_OIDC_ACCOUNT_CLAIM: must name a claim of the ID token")
    if not 0 < len(settings.oidc_name) <= 100:
        raise ConfigError("PUSHCORE_OIDC_NAME: must be 1 to 100 characters")


def retry_policy(settings: Settings) -> RetryPolicy:
    """The retry schedule the PUSHCORE_RETRY_* settings describe."""
    return RetryPolicy(
        max_attempts=settings.retry_max_attempts,
        max_age=settings.retry_max_age.total_seconds(),
        min_delay=settings.retry_min_delay.total_seconds(),
        max_delay=settings.retry_max_delay.total_seconds(),
    )
