"""JWT verification: algorithms fixed by configuration, and the classic attacks refused."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from joserfc import jwt
from joserfc.jwk import ECKey, OctKey, RSAKey
from starlette.testclient import TestClient

from pushcore import build_services, load_settings
from pushcore_http import create_app

ISSUER = "https://idp.example.com/"
AUDIENCE = "pushcore"


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def claims(**overrides: Any) -> dict[str, Any]:
    now = int(time.time())
    base: dict[str, Any] = {"sub": "alice", "iat": now, "exp": now + 600}
    base.update({"iss": ISSUER, "aud": AUDIENCE})
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not None}


class IdP:
    """An identity provider with an RSA and an EC key, published as a JWKS file."""

    def __init__(self, directory: Path) -> None:
        self.rsa = RSAKey.generate_key(2048, parameters={"kid": "rsa-1"})
        self.ec = ECKey.generate_key("P-256", parameters={"kid": "ec-1"})
        self.jwks_path = directory / "jwks.json"
        self.jwks_path.write_text(
            json.dumps({"keys": [self.rsa.as_dict(private=False), self.ec.as_dict(private=False)]})
        )

    def rs256(self, **overrides: Any) -> str:
        return jwt.encode({"alg": "RS256", "kid": "rsa-1"}, claims(**overrides), self.rsa)

    def es256(self, **overrides: Any) -> str:
        return jwt.encode({"alg": "ES256", "kid": "ec-1"}, claims(**overrides), self.ec)

    def rsa_public_pem(self) -> bytes:
        public = self.rsa.public_key
        return public.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )


@pytest.fixture
def idp(tmp_path: Path) -> IdP:
    return IdP(tmp_path)


@pytest.fixture
def jwks_client(tmp_path: Path, idp: IdP) -> Iterator[TestClient]:
    settings = load_settings(
        env={},
        data_dir=tmp_path / "data",
        jwks=str(idp.jwks_path),
        jwt_issuer=ISSUER,
        jwt_audience=AUDIENCE,
    )
    services = build_services(settings)
    with TestClient(create_app(services)) as client:
        yield client
    services.close()


def call(client: TestClient, token: str) -> tuple[int, Any]:
    response = client.get("/api/keys", headers={"Authorization": f"Bearer {token}"})
    return response.status_code, response.json()


INVALID = (401, {"error": "Invalid token", "code": "unauthorized"})
EXPIRED = (401, {"error": "Token expired", "code": "unauthorized"})


def test_valid_rs256_and_es256_tokens_are_accepted(jwks_client: TestClient, idp: IdP) -> None:
    assert call(jwks_client, idp.rs256()) == (200, [])
    assert call(jwks_client, idp.es256()) == (200, [])


def test_alg_none_is_refused(jwks_client: TestClient) -> None:
    header = b64(json.dumps({"alg": "none", "typ": "JWT"}).encode())
    payload = b64(json.dumps(claims()).encode())
    assert call(jwks_client, f"{header}.{payload}.") == INVALID


def test_hs256_signed_with_the_public_key_is_refused(jwks_client: TestClient, idp: IdP) -> None:
    # The key-confusion attack: HMAC keyed with the RSA public key the attacker can read.
    header = b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": "rsa-1"}).encode())
    payload = b64(json.dumps(claims()).encode())
    signing_input = f"{header}.{payload}".encode()
    signature = hmac.new(idp.rsa_public_pem(), signing_input, hashlib.sha256).digest()
    assert call(jwks_client, f"{header}.{payload}.{b64(signature)}") == INVALID


def test_expired_token_is_refused(jwks_client: TestClient, idp: IdP) -> None:
    now = int(time.time())
    assert call(jwks_client, idp.rs256(iat=now - 7200, exp=now - 3600)) == EXPIRED


def test_token_without_exp_is_refused(jwks_client: TestClient, idp: IdP) -> None:
    token = jwt.encode({"alg": "RS256", "kid": "rsa-1"}, {"sub": "a", "iss": ISSUER}, idp.rsa)
    assert call(jwks_client, token) == INVALID


@pytest.mark.parametrize(
    "overrides",
    [{"iss": "https://evil.example.com/"}, {"iss": None}, {"aud": "other"}, {"aud": None}],
)
def test_wrong_issuer_or_audience_is_refused(
    jwks_client: TestClient, idp: IdP, overrides: dict[str, Any]
) -> None:
    assert call(jwks_client, idp.rs256(**overrides)) == INVALID


def test_tampered_token_is_refused(jwks_client: TestClient, idp: IdP) -> None:
    header, payload, signature = idp.rs256().split(".")
    forged_payload = b64(json.dumps(claims(sub="mallory")).encode())
    assert call(jwks_client, f"{header}.{forged_payload}.{signature}") == INVALID
    flipped = signature[:-2] + ("A" if signature[-2] != "A" else "B") + signature[-1]
    assert call(jwks_client, f"{header}.{payload}.{flipped}") == INVALID


def test_token_from_another_key_is_refused(jwks_client: TestClient) -> None:
    stranger = RSAKey.generate_key(2048, parameters={"kid": "rsa-1"})
    token = jwt.encode({"alg": "RS256", "kid": "rsa-1"}, claims(), stranger)
    assert call(jwks_client, token) == INVALID


def test_garbage_is_refused(jwks_client: TestClient) -> None:
    for token in ("x", "a.b.c", "....", "e30.e30.", "x" * 9000):
        status, _ = call(jwks_client, token)
        assert status == 401


def test_hs256_deployment_refuses_other_algorithms(tmp_path: Path) -> None:
    secret = "s" * 40
    services = build_services(load_settings(env={}, data_dir=tmp_path, jwt_secret=secret))
    with TestClient(create_app(services)) as client:
        good = jwt.encode({"alg": "HS256"}, claims(iss=None, aud=None), OctKey.import_key(secret))
        assert call(client, good) == (200, [])
        hs512 = jwt.encode(
            {"alg": "HS512"},
            claims(iss=None, aud=None),
            OctKey.import_key(secret),
            algorithms=["HS512"],
        )
        assert call(client, hs512) == INVALID
        wrong_secret = jwt.encode(
            {"alg": "HS256"}, claims(iss=None, aud=None), OctKey.import_key("t" * 40)
        )
        assert call(client, wrong_secret) == INVALID
    services.close()


def test_first_valid_token_creates_a_free_account(tmp_path: Path) -> None:
    services = build_services(load_settings(env={}, data_dir=tmp_path))
    token = services.tokens.issue("newcomer", __import__("datetime").timedelta(minutes=5))
    with services.store.read() as tx:
        assert tx.accounts.get("newcomer") is None
    with TestClient(create_app(services)) as client:
        assert call(client, token) == (200, [])
        with services.store.read() as tx:
            account = tx.accounts.get("newcomer")
    assert account is not None
    assert account.plan.value == "free"


def test_generated_secret_is_private_and_stable(tmp_path: Path) -> None:
    first = build_services(load_settings(env={}, data_dir=tmp_path))
    secret_file = tmp_path / "jwt-secret"
    assert secret_file.stat().st_mode & 0o777 == 0o600
    token = first.tokens.issue("alice", __import__("datetime").timedelta(minutes=5))
    first.close()
    second = build_services(load_settings(env={}, data_dir=tmp_path))
    assert second.auth.authenticate_token(token).account_id == "alice"
    second.close()
