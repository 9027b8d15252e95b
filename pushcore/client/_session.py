"""A signed-in client's tokens: a short-lived access token, renewed with the refresh token.

A refresh token is single-use (API.md "Sign-in"): presenting a spent one again
revokes every token of that sign-in. So a session renews at most once per
refresh token, whoever asks: the senders renew under a lock and only when the
token they saw is still the current one, and whoever keeps the tokens (pushctl's
session file) is told of each new pair through ``on_change``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import attrs

from pushcore.client._call import Auth, Call, json_body, one
from pushcore.converter import SessionView

# Renew this long before the access token runs out, so that a call made just
# before its expiry does not arrive just after it.
RENEW_MARGIN = 30.0


@attrs.frozen
class Tokens:
    """What a sign-in gives: the access token, when it runs out, the refresh token."""

    account: str
    access_token: str
    refresh_token: str
    expires_at: float  # UNIX time: it is kept in a file between runs of pushctl

    @classmethod
    def of(cls, session: SessionView, now: float) -> Tokens:
        """The tokens of a session answer received at ``now``."""
        return cls(
            account=session.account.id,
            access_token=session.access_token,
            refresh_token=session.refresh_token,
            expires_at=now + session.expires_in,
        )


def login_call(account: str, password: str) -> Call[SessionView]:
    """POST /api/auth/login: a new session."""
    data = json_body(account=account, password=password)
    return Call("POST", "/api/auth/login", Auth.NONE, one(SessionView), data)


def refresh_call(refresh_token: str) -> Call[SessionView]:
    """POST /api/auth/refresh: the next pair; the refresh token given is spent."""
    data = json_body(refresh_token=refresh_token)
    return Call("POST", "/api/auth/refresh", Auth.NONE, one(SessionView), data)


def logout_call(refresh_token: str) -> Call[object]:
    """POST /api/auth/logout: the refresh token (and its access tokens' renewal) ends."""
    data = json_body(refresh_token=refresh_token)
    return Call("POST", "/api/auth/logout", Auth.NONE, lambda answer: answer, data)


class Session:
    """The current tokens of a signed-in client, and the rule for renewing them."""

    def __init__(
        self,
        tokens: Tokens,
        *,
        on_change: Callable[[Tokens], None] | None = None,
        latest: Callable[[], Tokens | None] | None = None,
        exclusive: Callable[[], AbstractContextManager[Any]] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """``on_change`` is told of each new pair; ``latest`` reads back what the keeper
        holds (another process may have renewed), under ``exclusive``, which keeps
        other renewals out (default: a lock among this process's threads)."""
        self.tokens = tokens
        self._on_change = on_change
        self._latest = latest
        self._exclusive = exclusive
        self._clock = clock
        self._threads = threading.Lock()

    def exclusive(self) -> AbstractContextManager[Any]:
        """Held by the sync client while it renews (the async client has its own lock)."""
        return self._exclusive() if self._exclusive is not None else self._threads

    def due(self) -> bool:
        """Whether the access token runs out within the margin."""
        return self._clock() >= self.tokens.expires_at - RENEW_MARGIN

    def renewal(self, spent: str) -> Call[SessionView] | None:
        """The refresh call spending ``spent``; None when someone already renewed it."""
        kept = self._latest() if self._latest is not None else None
        if kept is not None and kept.refresh_token != self.tokens.refresh_token:
            self.tokens = kept  # another process renewed: its pair is the current one
        if self.tokens.refresh_token != spent:
            return None
        return refresh_call(spent)

    def renewed(self, answer: SessionView) -> None:
        """Take the new pair, and tell whoever keeps the tokens."""
        self.tokens = Tokens.of(answer, self._clock())
        if self._on_change is not None:
            self._on_change(self.tokens)
