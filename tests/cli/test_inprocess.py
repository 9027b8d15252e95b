"""Local mode: the commands speak pushcore.Client, over the HTTP app in this process."""

from __future__ import annotations

import inspect

import pytest

from pushcore.domain.errors import Unauthorized
from pushcore.services import AuthService, CredentialKind, NotificationService
from pushcore_cli.inprocess import ActingAs
from tests.cli.conftest import Cli
from tests.cli.test_notifications import ok


def test_acting_as_replaces_every_method_of_the_auth_service() -> None:
    # It keeps none of AuthService's state: a method it inherited would fail.
    public = {name for name, _ in inspect.getmembers(AuthService) if not name.startswith("_")}
    assert public <= set(vars(ActingAs))


def test_only_its_own_credential_acts_as_the_account() -> None:
    auth = ActingAs("alice")

    by_key = auth.authenticate_key(auth.credential)
    by_token = auth.authenticate_token(auth.credential)

    assert by_key == by_token
    assert (by_key.account_id, by_key.kind) == ("alice", CredentialKind.USER)
    assert auth.cached_key(auth.credential) == by_key
    for other in ("", auth.credential + "x", ActingAs("alice").credential):
        with pytest.raises(Unauthorized):
            auth.authenticate_token(other)


def test_a_bug_is_raised_as_it_was_not_answered_as_a_500(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_args: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(NotificationService, "stats", broken)

    with pytest.raises(RuntimeError, match="a bug"):
        cli("notifications stats --account bob")


def test_a_page_has_the_apis_default_size(cli: Cli) -> None:
    for i in range(21):
        ok(cli, f"send n{i} --account bob --delay 1h")

    page = ok(cli, "notifications list --account bob")

    assert len(page["items"]) == 20
    assert page["nextCursor"] is not None
