"""A 201 means stored: kill -9 the server while groups of creates are being committed,
restart it, and find every acknowledged notification."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx

from tests.e2e.server import Server

CONNECTIONS = 32


async def post_until_killed(
    server: Server, key: dict[str, str], kill_after: int
) -> tuple[list[str], int]:
    """Create from CONNECTIONS tasks at once; SIGKILL the server once ``kill_after`` were
    acknowledged. The acknowledged ids, and how many requests got no answer."""
    acknowledged: list[str] = []
    unanswered = 0
    killed = asyncio.Event()

    async def one_connection(n: int) -> None:
        nonlocal unanswered
        async with httpx.AsyncClient(base_url=server.base, headers=key, timeout=10) as client:
            i = 0
            while not killed.is_set():
                i += 1
                try:
                    answer = await client.post(
                        "/api/notifications", json={"title": f"c{n} n{i}", "delay": "1h"}
                    )
                except httpx.TransportError:
                    unanswered += 1  # cut by the kill: not acknowledged, may or may not be stored
                    return
                assert answer.status_code == 201, answer.text
                acknowledged.append(answer.json()["id"])
                if len(acknowledged) >= kill_after and not killed.is_set():
                    killed.set()
                    # While the other connections' requests are in a group.
                    await asyncio.to_thread(server.kill)

    await asyncio.gather(*(one_connection(n) for n in range(CONNECTIONS)))
    return acknowledged, unanswered


def stored_ids(server: Server, key: dict[str, str]) -> set[str]:
    """Every notification of the account, page by page."""
    found: set[str] = set()
    cursor = None
    with httpx.Client(base_url=server.base, headers=key, timeout=10) as client:
        while True:
            params = {"limit": 100, **({"cursor": cursor} if cursor else {})}
            page = client.get("/api/notifications", params=params).json()
            found |= {n["id"] for n in page["items"]}
            cursor = page.get("nextCursor")
            if not cursor:
                return found


def test_every_acknowledged_create_survives_a_kill_during_group_commit(tmp_path: Path) -> None:
    # No engine: nothing changes what was stored but the creates themselves.
    server = Server(
        tmp_path / "data", env={"PUSHCORE_RATE_LIMIT": "0"}, command=("serve", "--no-engine")
    )
    server.start()
    try:
        key = server.key("alice")
        acknowledged: set[str] = set()
        cut = 0
        for kill_after in (100, 300, 600):
            ids, unanswered = asyncio.run(post_until_killed(server, key, kill_after))
            cut += unanswered
            acknowledged |= set(ids)
            server.start()
            stored = stored_ids(server, key)
            lost = acknowledged - stored
            assert not lost, f"{len(lost)} acknowledged but lost after kill -9"
            # Those cut by a kill may be stored or not; nothing else appears.
            assert len(stored) <= len(acknowledged) + cut
        assert cut > 0  # the kills did land while requests were being handled
    finally:
        server.stop()
