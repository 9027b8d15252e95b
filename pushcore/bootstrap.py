"""The composition root: the one place where ports meet their adapters.

``build_services`` is used by the HTTP app, by every CLI command and by the
tests (with fakes passed as overrides). Nothing is built at import time.
"""

from __future__ import annotations

import base64
import logging
import os
import secrets
from pathlib import Path

from pushcore.config import Settings
from pushcore.net import NetworkGuard
from pushcore.ports import Clock, IdGenerator, Random, Store, UrlGuard
from pushcore.services import (
    AccountService,
    AuthService,
    DeviceService,
    KeyService,
    Services,
    TokenIssuer,
    TokenVerifier,
)
from pushcore.services.tokens import JwksSource
from pushcore.storage import open_store
from pushcore.system import SecretsRandom, SystemClock, UlidGenerator

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


def build_services(
    settings: Settings,
    *,
    store: Store | None = None,
    clock: Clock | None = None,
    ids: IdGenerator | None = None,
    random: Random | None = None,
    guard: UrlGuard | None = None,
) -> Services:
    """Wire the services for ``settings``; any port may be overridden (tests pass fakes)."""
    clock = clock or SystemClock()
    ids = ids or UlidGenerator()
    random = random or SecretsRandom()
    guard = guard or NetworkGuard(allow_private=settings.allow_private_networks)
    store = store or open_store(settings.effective_database_url)

    secret = settings.jwt_secret
    jwks = None
    if settings.jwks:
        jwks = JwksSource(settings.jwks, settings.ca_file)
    elif secret is None:
        secret = ensure_jwt_secret(settings.data_dir)
    verifier = TokenVerifier(
        clock,
        settings.effective_jwt_algorithms,
        secret=secret,
        jwks=jwks,
        issuer=settings.jwt_issuer,
        audience=settings.jwt_audience,
    )
    accounts = AccountService(store, clock)
    return Services(
        settings=settings,
        store=store,
        clock=clock,
        accounts=accounts,
        auth=AuthService(store, clock, verifier, accounts),
        keys=KeyService(store, clock, ids, random),
        devices=DeviceService(store, clock, ids, guard),
        tokens=TokenIssuer(clock, secret),
    )
