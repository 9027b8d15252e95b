"""The benchmark's native fake APNs (granian) applies the h2 fake's checks over real HTTP/2.

The throughput figures of docs/benchmarks.md are only worth something if this
fake refuses what APNs refuses: a push it accepts is recorded, a wrong topic
or a token signed by another key is answered with Apple's status and reason.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from benchmarks.apns import TOKEN, NativeFake, gateway_for, notification
from pushcore.domain.model import Delivery, Device, Platform
from pushcore.domain.outcomes import Delivered, Dispatch, Failed
from pushcore.domain.states import DeliveryStatus

pytestmark = pytest.mark.slow


def new_key() -> bytes:
    return ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


@pytest.fixture(scope="module")
def fake(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[NativeFake, bytes]]:
    directory = tmp_path_factory.mktemp("native")
    key = new_key()
    (directory / "AuthKey.p8").write_bytes(key)
    started = NativeFake(directory / "AuthKey.p8", directory / "ca.pem")
    try:
        yield started, key
    finally:
        started.stop()


def dispatches(count: int) -> list[Dispatch]:
    now = datetime.now(UTC)
    device = Device("dev_1", "bench", Platform.IOS, TOKEN, None, now)
    return [
        Dispatch(
            Delivery(f"dlv_{i}", f"ntf_{i}", "bench", "dev_1", DeliveryStatus.IN_FLIGHT, now),
            device,
            notification(i),
        )
        for i in range(count)
    ]


def send(fake: NativeFake, key: bytes, topic: str = "bench") -> list[object]:
    gateway = gateway_for(fake, key)
    gateway.topic = topic

    async def run() -> list[object]:
        try:
            return list(await gateway.send(dispatches(3)))
        finally:
            await gateway.aclose()

    return asyncio.run(run())


def test_accepted_pushes_are_counted(fake: tuple[NativeFake, bytes]) -> None:
    native, key = fake
    native.reset()
    assert send(native, key) == [Delivered()] * 3
    count = native.count()
    assert count["accepted"] == 3
    assert count["rejected"] == 0
    assert 0 < count["first"] <= count["last"]


def test_a_wrong_topic_is_refused_as_apns_does(fake: tuple[NativeFake, bytes]) -> None:
    native, key = fake
    native.reset()
    assert send(native, key, topic="com.example.other") == [Failed("TopicDisallowed")] * 3
    assert native.count()["rejected"] == 3


def test_a_token_signed_by_another_key_is_refused(fake: tuple[NativeFake, bytes]) -> None:
    native, _ = fake
    native.reset()
    assert send(native, new_key()) == [Failed("InvalidProviderToken")] * 3
    assert native.count()["accepted"] == 0
