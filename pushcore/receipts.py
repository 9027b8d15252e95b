"""The receipt key: what every process on one database signs receipt tokens with.

Shared through ``server_keys`` as the VAPID pair is: the engine that puts a
token in a payload and the server that checks it may be different processes,
so the first to ask makes the key and every other reads it.
"""

from __future__ import annotations

import base64
import secrets
import threading
from collections.abc import Callable

from pushcore.domain.receipts import receipt_token
from pushcore.ports import Clock, Store

RECEIPT_KEY = "receipts"
"""The name of the receipt key in ``server_keys``."""


class ReceiptKey:
    """This process's copy of the shared receipt key, read (or made) on first use."""

    def __init__(
        self, store: Store, clock: Clock, token_bytes: Callable[[int], bytes] = secrets.token_bytes
    ) -> None:
        self._store = store
        self._clock = clock
        self._token_bytes = token_bytes
        self._key: bytes | None = None
        self._lock = threading.Lock()

    def get(self) -> bytes:
        """The key, read (or made) in a transaction of its own the first time: never
        inside a caller's, whose rollback would leave this process a key nobody stored."""
        with self._lock:
            if self._key is None:
                candidate = base64.urlsafe_b64encode(self._token_bytes(32)).decode()
                with self._store.transaction() as tx:
                    stored = tx.server_keys.claim(RECEIPT_KEY, candidate, self._clock.now())
                self._key = base64.urlsafe_b64decode(stored)
            return self._key

    def token(self, delivery_id: str) -> str:
        """The receipt token of ``delivery_id``."""
        return receipt_token(self.get(), delivery_id)
