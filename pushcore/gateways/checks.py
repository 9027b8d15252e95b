"""Which platform gateways are configured, and whether their credentials load and sign."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from pushcore.config import Settings
from pushcore.domain.model import Platform
from pushcore.ports import Clock

if TYPE_CHECKING:
    from pushcore.bootstrap import PlatformSetup


@attrs.frozen
class GatewayCheck:
    """One platform's state: not configured, ready, or broken (with why)."""

    platform: Platform
    configured: bool
    ok: bool
    detail: str


def _check(setup: PlatformSetup, settings: Settings, clock: Clock) -> GatewayCheck:
    if not setup.configured(settings):
        return GatewayCheck(setup.platform, False, False, f"not configured ({setup.needs})")
    try:
        return GatewayCheck(setup.platform, True, True, setup.build(settings, clock).check())
    except (OSError, ValueError, KeyError) as exc:
        return GatewayCheck(setup.platform, True, False, str(exc) or type(exc).__name__)


def check_gateways(settings: Settings, clock: Clock) -> list[GatewayCheck]:
    """Load each configured platform's credentials and sign with them, without sending."""
    # bootstrap decides what is configured; imported here as it imports every gateway.
    from pushcore.bootstrap import PLATFORMS

    checks = [_check(setup, settings, clock) for setup in PLATFORMS]
    return [*checks, GatewayCheck(Platform.WEBHOOK, True, True, "ready (needs no credentials)")]
