"""The icon check: a sender icon or stream icon URL must serve a PNG or JPEG of at most 5 MB.

Fetched once per URL (verdicts are cached, refusals for a shorter while), on
the event loop with a deadline for the whole check, a byte cap while
streaming, through the SSRF guard on every redirect hop. A check names a URL
of the caller's choosing, so it must never hold what other accounts need: at
most ``per_account`` checks of one account and ``total`` in all run at once,
and a check that cannot start waits no longer than its own deadline.
"""

from __future__ import annotations

import asyncio
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING
from urllib.parse import urljoin

from pushcore.domain.addresses import IPAddress
from pushcore.domain.errors import RateLimited
from pushcore.domain.scheduling import SENDER_ICON_MAX_BYTES
from pushcore.outbound.guard import NetworkGuard, pin

if TYPE_CHECKING:
    # Imported by the first check (_probe): a command that checks no icon loads no httpx.
    import httpx

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
JPEG_MAGIC = b"\xff\xd8\xff"
CACHE_SIZE = 1024
GOOD_TTL = 3600.0
# A failure may be passing (a server restarting); ask again soon.
BAD_TTL = 60.0
MAX_REDIRECTS = 3
TOO_SLOW = "could not be fetched in time"
# Name resolution blocks; it gets threads of its own so that slow DNS answers
# for icon hosts cannot take the threads the API's database calls run on.
RESOLVER_THREADS = 4

ClientFactory = Callable[[], "httpx.AsyncClient"]


def is_png_or_jpeg(head: bytes) -> bool:
    """True when ``head`` starts like a PNG or a JPEG file."""
    return head.startswith(PNG_MAGIC) or head.startswith(JPEG_MAGIC)


class HttpIconProbe:
    """Fetches icon URLs (async, bounded per account and in all) and remembers the verdicts."""

    def __init__(
        self,
        guard: NetworkGuard,
        client: ClientFactory,
        max_bytes: int = SENDER_ICON_MAX_BYTES,
        deadline: float = 5.0,
        total: int = 32,
        per_account: int = 4,
    ) -> None:
        self._guard = guard
        self._new_client = client
        self._max_bytes = max_bytes
        # The client's timeouts are per read; this bounds the whole check (its
        # wait for a slot included), so a server trickling bytes cannot hold a
        # request for long.
        self._deadline = deadline
        self._total = total
        self._per_account = per_account
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, tuple[float, str | None]] = OrderedDict()
        # Clients and semaphores belong to one event loop: one set per loop (a
        # server has one; pushctl runs a loop per check).
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient]
        self._clients = weakref.WeakKeyDictionary()
        self._slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Slots]
        self._slots = weakref.WeakKeyDictionary()
        self._resolver = ThreadPoolExecutor(RESOLVER_THREADS, thread_name_prefix="icon-dns")

    async def check(self, url: str, account_id: str) -> None:
        """ValueError with the reason unless ``url`` serves an acceptable icon;
        RateLimited when no check slot came free before the deadline."""
        verdict = self._cached(url)
        if verdict is None:
            verdict = await self._check(url, account_id)
        if verdict[1] is not None:
            raise ValueError(verdict[1])

    def busy_accounts(self) -> int:
        """How many accounts have checks running or waiting (on every event loop)."""
        return sum(len(slots) for slots in self._slots.values())

    def _cached(self, url: str) -> tuple[float, str | None] | None:
        with self._lock:
            cached = self._cache.get(url)
        if cached is not None and cached[0] > time.monotonic():
            return cached
        return None

    def _remember(self, url: str, verdict: str | None) -> tuple[float, str | None]:
        entry = (time.monotonic() + (BAD_TTL if verdict else GOOD_TTL), verdict)
        with self._lock:
            self._cache[url] = entry
            self._cache.move_to_end(url)
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        return entry

    async def _check(self, url: str, account_id: str) -> tuple[float, str | None]:
        loop = asyncio.get_running_loop()
        slots = self._slots.get(loop)
        if slots is None:
            slots = self._slots[loop] = _Slots(self._total, self._per_account)
        asked = loop.time()
        started: float | None = None
        try:
            async with asyncio.timeout_at(asked + self._deadline), slots.taken(account_id):
                started = loop.time()
                # Another request may have settled this URL while this one waited.
                cached = self._cached(url)
                if cached is not None:
                    return cached
                verdict = await self._probe(url)
        except TimeoutError:
            # Never started, or cut short by the wait for a slot: not the URL's
            # fault, so not a 400 and not remembered.
            if started is None or started - asked > 0.1 * self._deadline:
                raise RateLimited(
                    "Too many icon checks in progress; retry later", round(self._deadline)
                ) from None
            verdict = TOO_SLOW
        return self._remember(url, verdict)

    def _client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = self._clients[loop] = self._new_client()
        return client

    async def _resolve(self, url: str) -> IPAddress:
        loop = asyncio.get_running_loop()
        addresses = await loop.run_in_executor(self._resolver, self._guard.resolve, url)
        return addresses[0]

    async def _probe(self, url: str) -> str | None:
        """None when the icon is acceptable, else the reason."""
        import httpx

        current = url
        client = self._client()
        for _ in range(MAX_REDIRECTS + 1):
            try:
                address = await self._resolve(current)
            except ValueError as exc:
                return str(exc)
            pinned = pin(current, address)
            # httpcore checks the certificate against sni_hostname, not the IP.
            extensions = {"sni_hostname": pinned.server_name} if pinned.server_name else {}
            # Connection: close, because httpcore pools connections by address and
            # would reuse one verified for another host name pinned to the same IP.
            headers = {"Host": pinned.host_header, "Connection": "close"}
            try:
                async with client.stream(
                    "GET", pinned.url, headers=headers, extensions=extensions
                ) as response:
                    if response.is_redirect and "location" in response.headers:
                        current = urljoin(current, response.headers["location"])
                        continue
                    return await self._judge(response)
            except httpx.TimeoutException:
                return TOO_SLOW
            except httpx.HTTPError:
                return "could not be fetched"
        return "redirects too many times"

    async def _judge(self, response: httpx.Response) -> str | None:
        mib = 1024 * 1024
        size = (
            f"{self._max_bytes // mib} MB"
            if self._max_bytes % mib == 0
            else f"{self._max_bytes} bytes"
        )
        too_big = f"must be at most {size}"
        if response.status_code != 200:
            return f"could not be fetched (HTTP {response.status_code})"
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self._max_bytes:
            return too_big
        head = b""
        total = 0
        async for chunk in response.aiter_bytes():
            total += len(chunk)
            if total > self._max_bytes:
                return too_big
            if len(head) < 8:
                head += chunk[: 8 - len(head)]
        if not is_png_or_jpeg(head):
            return "must be a PNG or JPEG image"
        return None


class _Slots:
    """Check slots of one event loop: ``per_account`` per account, ``total`` in all.

    An account's slot is taken before a global one, so one account's waiting
    checks queue on its own semaphore and never hold global slots.
    """

    def __init__(self, total: int, per_account: int) -> None:
        self._total = asyncio.Semaphore(total)
        self._per_account = per_account
        self._accounts: dict[str, tuple[asyncio.Semaphore, int]] = {}

    def __len__(self) -> int:
        return len(self._accounts)

    @asynccontextmanager
    async def taken(self, account_id: str) -> AsyncIterator[None]:
        """Hold a slot of ``account_id`` and a global one (waiting as long as the
        caller's enclosing timeout lets it)."""
        semaphore, users = self._accounts.get(account_id, (None, 0))
        if semaphore is None:
            semaphore = asyncio.Semaphore(self._per_account)
        self._accounts[account_id] = (semaphore, users + 1)
        try:
            async with semaphore, self._total:
                yield
        finally:
            semaphore, users = self._accounts[account_id]
            if users == 1:
                del self._accounts[account_id]  # no growth with the number of accounts
            else:
                self._accounts[account_id] = (semaphore, users - 1)
