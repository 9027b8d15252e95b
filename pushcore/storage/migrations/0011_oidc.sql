-- 0011: single sign-on (OpenID Connect). A round trip to the provider, from
-- /api/auth/oidc/start to its callback, and the one-time code a finished sign-in
-- leaves for the app, each a row that any API process on the database can
-- take, once: the callback or exchange deletes it and gets it back in one
-- statement (DELETE ... RETURNING), so of two takers exactly one gets it.
--
-- Secrets are kept only as their SHA-256 hashes (the PKCE verifier itself stays
-- in the browser that started, see pushcore/domain/oidc.py). Rows past
-- expires_at are refused when taken, and swept by retention.

CREATE TABLE oidc_flows (
    state_hash    text NOT NULL PRIMARY KEY,
    nonce_hash    text NOT NULL,
    verifier_hash text NOT NULL,
    next_path     text NOT NULL,
    created_at    {time} NOT NULL,
    expires_at    {time} NOT NULL
);

CREATE INDEX oidc_flows_expires_at ON oidc_flows (expires_at);

CREATE TABLE oidc_codes (
    code_hash  text NOT NULL PRIMARY KEY,
    account_id {id} NOT NULL,
    created_at {time} NOT NULL,
    expires_at {time} NOT NULL
);

CREATE INDEX oidc_codes_expires_at ON oidc_codes (expires_at);
