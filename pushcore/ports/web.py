"""Checks of URLs given by users: icons and the SSRF guard."""

from __future__ import annotations

from typing import Protocol


class IconProbe(Protocol):
    """Checks that a URL serves an icon the apps can show."""

    def check(self, url: str) -> None:
        """Raise ValueError (with a message for people) unless the URL serves a PNG or
        JPEG of at most 5 MB from an allowed address."""
        ...


class UrlGuard(Protocol):
    """Decides whether the service may connect to a URL given by a user (SSRF guard)."""

    def check(self, url: str) -> None:
        """Raise ValidationError-worthy ValueError when the URL's host is not allowed."""
        ...
