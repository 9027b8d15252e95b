"""Client.login against a real server: a session that renews itself, once per refresh token."""

from __future__ import annotations

import asyncio
import itertools
import subprocess
import sys
import threading

import attrs
import pytest

from pushcore import AsyncClient, Client, Unauthorized
from pushcore.client import Session, Tokens
from tests.e2e.server import Server

PASSWORD = "correct horse battery"
PUSHCTL = (sys.executable, "-m", "pushcore_cli.main")
_numbers = itertools.count()


def person(server: Server) -> str:
    """A new password account on ``server``, made with pushctl as its operator would."""
    name = f"person{next(_numbers)}"
    done = subprocess.run(
        [
            *PUSHCTL,
            "--data-dir",
            str(server.data_dir),
            "accounts",
            "create",
            name,
            "--password-stdin",
        ],
        check=False,
        input=f"{PASSWORD}\n",
        capture_output=True,
        text=True,
        env=server.env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return name


def refresh_status(server: Server, refresh_token: str) -> int:
    """The status of presenting ``refresh_token`` to /api/auth/refresh directly."""
    answer = server.request("POST", "/api/auth/refresh", json={"refreshToken": refresh_token})
    return answer.status_code


def expired(session: Session) -> Session:
    """A session whose access token is due for renewal now, with the same refresh token."""
    return Session(attrs.evolve(session.tokens, expires_at=0.0))


def test_login_gives_a_client_that_acts_as_the_person(server: Server) -> None:
    name = person(server)
    kept: list[Tokens] = []
    with Client.login(server.base, name, PASSWORD, on_change=kept.append) as client:
        created = client.keys.create("from the client", ["devices:read"])
        assert created.key.startswith("psk_")
        assert [k.name for k in client.keys.list()] == ["from the client"]
        assert client.session is not None
        assert client.session.tokens.account == name
    # The keeper was told of the first pair, and only that one.
    assert [t.account for t in kept] == [name]
    assert kept[0].refresh_token.startswith("psr_")


def test_a_wrong_password_raises_unauthorized_and_makes_no_session(server: Server) -> None:
    name = person(server)
    with pytest.raises(Unauthorized) as raised:
        Client.login(server.base, name, "not the password")
    assert raised.value.message == "Invalid account or password"
    with pytest.raises(Unauthorized) as unknown:
        Client.login(server.base, "nobody-here", "not the password")
    assert unknown.value.message == "Invalid account or password"


def test_a_due_token_is_renewed_before_the_call_and_the_old_refresh_token_is_spent(
    server: Server,
) -> None:
    name = person(server)
    with Client.login(server.base, name, PASSWORD) as signed_in:
        assert signed_in.session is not None
        first = signed_in.session.tokens
    kept: list[Tokens] = []
    session = Session(attrs.evolve(first, expires_at=0.0), on_change=kept.append)
    with Client(server.base, session=session) as client:
        assert client.keys.list() == []
    assert len(kept) == 1
    assert kept[0].refresh_token != first.refresh_token
    # The new refresh token is the live one; the spent one was not presented twice,
    # or the server would have revoked the new one with it.
    assert refresh_status(server, kept[0].refresh_token) == 200


def test_threads_that_find_the_token_due_renew_it_once(server: Server) -> None:
    name = person(server)
    with Client.login(server.base, name, PASSWORD) as signed_in:
        assert signed_in.session is not None
        tokens = signed_in.session.tokens
    kept: list[Tokens] = []
    session = Session(attrs.evolve(tokens, expires_at=0.0), on_change=kept.append)
    errors: list[BaseException] = []
    with Client(server.base, session=session) as client:

        def call() -> None:
            try:
                client.keys.list()
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=call) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        assert errors == []
        # Renewed once; had two threads spent the same refresh token, the server
        # would have revoked the chain and these calls would fail.
        assert len(kept) == 1
        assert client.keys.list() == []


def test_an_access_token_refused_is_renewed_once_and_the_call_made_again(server: Server) -> None:
    name = person(server)
    with Client.login(server.base, name, PASSWORD) as signed_in:
        assert signed_in.session is not None
        tokens = signed_in.session.tokens
    # Not due by the clock, but refused by the server (as after a signing-key change).
    session = Session(attrs.evolve(tokens, access_token="not.a.token"))
    with Client(server.base, session=session) as client:
        assert client.keys.list() == []
        assert session.tokens.refresh_token != tokens.refresh_token


def test_logout_revokes_the_refresh_token(server: Server) -> None:
    name = person(server)
    client = Client.login(server.base, name, PASSWORD)
    assert client.session is not None
    refresh = client.session.tokens.refresh_token
    client.logout()
    assert client.session is None
    client.close()
    assert refresh_status(server, refresh) == 401


def test_the_async_client_signs_in_and_renews_once_for_many_tasks(server: Server) -> None:
    name = person(server)

    async def scenario() -> tuple[int, list[Tokens]]:
        client = await AsyncClient.login(server.base, name, PASSWORD)
        async with client:
            assert client.session is not None
            kept: list[Tokens] = []
            tokens = attrs.evolve(client.session.tokens, expires_at=0.0)
            due = Session(tokens, on_change=kept.append)
            async with AsyncClient(server.base, session=due) as renewing:
                lists = await asyncio.gather(*(renewing.keys.list() for _ in range(8)))
            return len(lists), kept

    count, kept = asyncio.run(scenario())
    assert count == 8
    assert len(kept) == 1
