"""Fixtures of the HTTP tests that need more than the shared ones: a fake OpenID provider."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pushcore.domain.oidc import CALLBACK_PATH
from tests.fakes.oidc_provider import FakeProvider, ProviderTls, provider_tls, running_provider

BASE = "http://testserver"  # where Starlette's TestClient says it is


@pytest.fixture
def tls(tmp_path: Path) -> ProviderTls:
    """A test CA, its file (PUSHCORE_CA_FILE), and a certificate for the provider."""
    return provider_tls(tmp_path)


@pytest.fixture
def provider(tls: ProviderTls) -> Iterator[FakeProvider]:
    """A fake OpenID provider over HTTPS, knowing the test app's redirect URI."""
    with running_provider(tls.server, (BASE + CALLBACK_PATH,)) as fake:
        yield fake
