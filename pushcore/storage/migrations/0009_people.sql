-- 0009: people who sign in. An account's last sign-in; its password (the argon2id
-- hash only, in a table of its own so that reading an account never reads it); and
-- the refresh tokens of sessions, kept only as SHA-256 hashes.
--
-- A sign-in's tokens share family_id (the first token's id): a spent token
-- presented again revokes the family. used_at decides single use: the UPDATE that
-- sets it only where it is NULL is the one refresh that succeeds.

ALTER TABLE accounts ADD COLUMN last_sign_in_at {time};

CREATE TABLE passwords (
    account_id {id} NOT NULL PRIMARY KEY,
    hash       text NOT NULL,
    set_at     {time} NOT NULL
);

CREATE TABLE refresh_tokens (
    id         {id} NOT NULL PRIMARY KEY,
    account_id {id} NOT NULL,
    family_id  {id} NOT NULL,
    token_hash text NOT NULL UNIQUE,
    created_at {time} NOT NULL,
    expires_at {time} NOT NULL,
    used_at    {time},
    revoked_at {time}
);

CREATE INDEX refresh_tokens_family_id ON refresh_tokens (family_id);
CREATE INDEX refresh_tokens_account_id ON refresh_tokens (account_id);
-- Retention deletes the expired ones, oldest first.
CREATE INDEX refresh_tokens_expires_at ON refresh_tokens (expires_at);
