"""What a client's exception says: the fields' messages and what to do, under the
public class names."""

from __future__ import annotations

import pytest

import pushcore
from tests.client.conftest import Account
from tests.e2e.server import Server


def test_a_validation_error_says_what_is_wrong_with_each_field(
    server: Server, account: Account
) -> None:
    with (
        pushcore.Client(server.base, token=account.token) as client,
        pytest.raises(pushcore.ValidationError) as info,
    ):
        client.devices.register("webhook", "https://example.invalid/hook")
    error = info.value
    assert error.details[0].field == "token"
    assert str(error).startswith("Invalid request: token: ")
    assert error.details[0].message in str(error)
    assert type(error).__module__ == "pushcore"
    assert repr(type(error)) == "<class 'pushcore.ValidationError'>"


def test_a_wrong_credential_says_what_to_do(server: Server, account: Account) -> None:
    with (
        pushcore.Client(server.base, token=account.token) as client,
        pytest.raises(pushcore.Unauthorized) as info,
    ):
        client.notifications.stats()
    assert info.value.message == "This endpoint requires an API key"
    assert "POST /api/keys" in str(info.value)


def test_every_public_error_class_is_named_under_pushcore() -> None:
    for name in pushcore.__all__:
        value = getattr(pushcore, name)
        if isinstance(value, type) and issubclass(value, pushcore.PushcoreError):
            assert value.__module__ == "pushcore", name
