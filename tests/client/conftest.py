"""A real `pushctl serve` for the client's tests, and accounts with credentials on it."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import attrs
import pytest

from tests.e2e.server import Server
from tests.fakes.receiver import Receiver, running_receiver

ALL_SCOPES = ["notifications:read", "notifications:write", "devices:read", "devices:write"]
_numbers = itertools.count()


@attrs.frozen
class Account:
    """An account on the test server: a JWT and an API key with every scope."""

    name: str
    token: str
    api_key: str


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server for every client test; each test works in accounts of its own."""
    s = Server(tmp_path_factory.mktemp("client") / "data")
    s.start()
    try:
        yield s
    finally:
        s.stop()


def new_account(server: Server) -> Account:
    """A fresh account, its token and a key (made over plain HTTP, not the client)."""
    name = f"acct-{next(_numbers)}"
    token = server.user(name)["Authorization"].removeprefix("Bearer ")
    return Account(name, token, server.key(name)["X-API-Key"])


@pytest.fixture
def account(server: Server) -> Account:
    return new_account(server)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as r:
        yield r
