-- 0012: single sign-on binds accounts to the provider's identity (iss, sub).
--
-- oidc_identities: the account each identity signs into, bound when single
-- sign-on created the account or when a signed-in session linked it; an
-- identity signs into its bound account only, and a claim naming any other
-- existing account is a clash (pushcore/domain/oidc.py, landing).
--
-- oidc_legacy_accounts: accounts single sign-on made before this migration,
-- with no identity row: each is bound to the first identity that claims it,
-- only while it still has no password (services/oidc.py). Which they are:
-- accounts with no password that have signed in (only single sign-on signs in
-- an account without a password) or that a one-time code of a sign-in
-- names. An account with a password is never among them: a stranger may have
-- signed it up before its namesake's first single sign-on.
--
-- The one-time code works only in the browser that started its sign-in:
-- browser_hash is the SHA-256 of that browser's secret (its cookie), carried
-- from the round trip to its code. Round trips and codes in flight during the
-- upgrade have none, and are refused.

CREATE TABLE oidc_identities (
    issuer     text NOT NULL,
    subject    text NOT NULL,
    account_id {id} NOT NULL,
    created_at {time} NOT NULL,
    PRIMARY KEY (issuer, subject)
);

CREATE INDEX oidc_identities_account_id ON oidc_identities (account_id);

CREATE TABLE oidc_legacy_accounts (
    account_id {id} NOT NULL PRIMARY KEY
);

INSERT INTO oidc_legacy_accounts (account_id)
SELECT id FROM accounts
WHERE id NOT IN (SELECT account_id FROM passwords)
  AND (last_sign_in_at IS NOT NULL OR id IN (SELECT account_id FROM oidc_codes));

ALTER TABLE oidc_flows ADD COLUMN browser_hash text NOT NULL DEFAULT '';
ALTER TABLE oidc_flows ADD COLUMN link_account {id};
ALTER TABLE oidc_codes ADD COLUMN browser_hash text NOT NULL DEFAULT '';
