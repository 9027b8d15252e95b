"""The icon check: a sender icon or stream icon URL must serve a PNG or JPEG of at most 5 MB.

Fetched once per URL (answers are cached), with a short timeout and a byte
cap while streaming, through the SSRF guard on every redirect hop.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from urllib.parse import urljoin

import httpx

from pushcore.adapters.net import NetworkGuard, pin
from pushcore.domain.scheduling import SENDER_ICON_MAX_BYTES

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
JPEG_MAGIC = b"\xff\xd8\xff"
CACHE_SIZE = 1024
GOOD_TTL = 3600.0
# A failure may be passing (a server restarting); ask again soon.
BAD_TTL = 60.0
MAX_REDIRECTS = 3


def is_png_or_jpeg(head: bytes) -> bool:
    """True when ``head`` starts like a PNG or a JPEG file."""
    return head.startswith(PNG_MAGIC) or head.startswith(JPEG_MAGIC)


class HttpIconProbe:
    """Fetches icon URLs and remembers the verdicts."""

    def __init__(
        self,
        guard: NetworkGuard,
        client: httpx.Client,
        max_bytes: int = SENDER_ICON_MAX_BYTES,
        deadline: float = 5.0,
    ) -> None:
        self._guard = guard
        self._client = client
        self._max_bytes = max_bytes
        # The client's timeouts are per read; this bounds the whole check, so a
        # server trickling bytes cannot hold an API request for long.
        self._deadline = deadline
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, tuple[float, str | None]] = OrderedDict()

    def check(self, url: str) -> None:
        """ValueError with the reason unless ``url`` serves an acceptable icon."""
        now = time.monotonic()
        with self._lock:
            cached = self._cache.get(url)
        if cached is not None and cached[0] > now:
            verdict = cached[1]
        else:
            verdict = self._probe(url)
            with self._lock:
                self._cache[url] = (now + (BAD_TTL if verdict else GOOD_TTL), verdict)
                self._cache.move_to_end(url)
                while len(self._cache) > CACHE_SIZE:
                    self._cache.popitem(last=False)
        if verdict is not None:
            raise ValueError(verdict)

    def _probe(self, url: str) -> str | None:
        """None when the icon is acceptable, else the reason."""
        current = url
        give_up = time.monotonic() + self._deadline
        for _ in range(MAX_REDIRECTS + 1):
            try:
                address = self._guard.resolve(current)[0]
            except ValueError as exc:
                return str(exc)
            pinned = pin(current, address)
            # httpcore checks the certificate against sni_hostname, not the IP.
            extensions = {"sni_hostname": pinned.server_name} if pinned.server_name else {}
            # Connection: close, because httpcore pools connections by address and
            # would reuse one verified for another host name pinned to the same IP.
            headers = {"Host": pinned.host_header, "Connection": "close"}
            try:
                with self._client.stream(
                    "GET", pinned.url, headers=headers, extensions=extensions
                ) as response:
                    if response.is_redirect and "location" in response.headers:
                        current = urljoin(current, response.headers["location"])
                        continue
                    return self._judge(response, give_up)
            except httpx.TimeoutException:
                return "could not be fetched in time"
            except httpx.HTTPError:
                return "could not be fetched"
        return "redirects too many times"

    def _judge(self, response: httpx.Response, give_up: float) -> str | None:
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
        for chunk in response.iter_bytes():
            if time.monotonic() > give_up:
                return "could not be fetched in time"
            total += len(chunk)
            if total > self._max_bytes:
                return too_big
            if len(head) < 8:
                head += chunk[: 8 - len(head)]
        if not is_png_or_jpeg(head):
            return "must be a PNG or JPEG image"
        return None
