"""Which platform gateways are configured, and whether their credentials load and sign."""

from __future__ import annotations

from collections.abc import Callable

import attrs

from pushcore.config import Settings
from pushcore.domain.model import Platform
from pushcore.ports import Clock


@attrs.frozen
class GatewayCheck:
    """One platform's state: not configured, ready, or broken (with why)."""

    platform: Platform
    configured: bool
    ok: bool
    detail: str


def _check(
    platform: Platform, configured: bool, missing: str, build: Callable[[], str]
) -> GatewayCheck:
    if not configured:
        return GatewayCheck(platform, False, False, missing)
    try:
        return GatewayCheck(platform, True, True, build())
    except (OSError, ValueError, KeyError) as exc:
        return GatewayCheck(platform, True, False, str(exc) or type(exc).__name__)


def check_gateways(settings: Settings, clock: Clock) -> list[GatewayCheck]:
    """Load each configured platform's credentials and sign with them, without sending."""
    from pushcore.gateways.apns import ApnsGateway
    from pushcore.gateways.fcm import FcmGateway
    from pushcore.gateways.webpush import WebPushGateway

    return [
        _check(
            Platform.IOS,
            settings.apns_key_file is not None,
            "not configured (PUSHCORE_APNS_KEY_FILE, _KEY_ID, _TEAM_ID, _TOPIC)",
            lambda: ApnsGateway.from_settings(settings, clock).check(),
        ),
        _check(
            Platform.ANDROID,
            settings.fcm_service_account_file is not None,
            "not configured (PUSHCORE_FCM_SERVICE_ACCOUNT_FILE)",
            lambda: FcmGateway.from_settings(settings, clock).check(),
        ),
        _check(
            Platform.WEB,
            bool(settings.vapid_subject),
            "not configured (PUSHCORE_VAPID_SUBJECT)",
            lambda: WebPushGateway.from_settings(settings, clock).check(),
        ),
        GatewayCheck(Platform.WEBHOOK, True, True, "ready (needs no credentials)"),
    ]
