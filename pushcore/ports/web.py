"""Checks of URLs given by users: icons and the SSRF guard."""

from __future__ import annotations

from typing import Protocol


class IconProbe(Protocol):
    """Checks that a URL serves an icon the apps can show."""

    async def check(self, url: str, account_id: str) -> None:
        """Raise ValueError (with a message for people) unless the URL serves a PNG or
        JPEG of at most 5 MB from an allowed address; RateLimited when too many checks
        (of ``account_id``, or in all) are running for this one to start in time."""
        ...


class UrlGuard(Protocol):
    """Decides whether the service may connect to a URL given by a user (SSRF guard)."""

    def check(self, url: str) -> None:
        """Raise ValidationError-worthy ValueError when the URL's host is not allowed."""
        ...
