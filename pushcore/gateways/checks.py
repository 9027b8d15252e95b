"""Which platform gateways are configured, and whether their credentials load and sign."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import attrs

from pushcore.config import Settings
from pushcore.domain.model import Platform
from pushcore.ports import Clock, Gateway


class CheckableGateway(Gateway, Protocol):
    """A platform gateway that can load its credentials and sign without sending."""

    def check(self) -> str:
        """What was loaded; raises OSError, ValueError or KeyError when it does not work."""
        ...


@attrs.frozen
class PlatformSetup:
    """How one credentialed platform is configured and its gateway built."""

    platform: Platform
    name: str
    needs: str  # the settings to set, for messages
    configured: Callable[[Settings], bool]
    build: Callable[[Settings, Clock], CheckableGateway]

    def missing(self) -> str:
        """Why deliveries to this platform fail while it is not configured."""
        return f"{self.name} is not configured (set {self.needs})"


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


def check_gateways(
    platforms: Sequence[PlatformSetup], settings: Settings, clock: Clock
) -> list[GatewayCheck]:
    """Load each configured platform's credentials and sign with them, without sending."""
    # The composition root's PLATFORMS is passed in: it imports every gateway,
    # and this module sits below it.
    checks = [_check(setup, settings, clock) for setup in platforms]
    return [*checks, GatewayCheck(Platform.WEBHOOK, True, True, "ready (needs no credentials)")]
