-- 0001: accounts, API keys and devices.
--
-- Timestamps are INTEGER milliseconds since the Unix epoch (UTC): they compare
-- as numbers, so conditions such as "last used before X" run in SQL.
--
-- There are no foreign keys to accounts: the store ports do not require an
-- account row before its keys or devices (the memory store does not either),
-- and one behaviour across adapters matters more here.
--
-- Ids are declared NOT NULL because SQLite, for historical reasons, accepts
-- NULL in a non-integer PRIMARY KEY.

CREATE TABLE accounts (
    id         TEXT NOT NULL PRIMARY KEY,
    plan       TEXT NOT NULL,
    created_at INTEGER NOT NULL
);

CREATE TABLE api_keys (
    id           TEXT NOT NULL PRIMARY KEY,
    account_id   TEXT NOT NULL,
    name         TEXT NOT NULL,
    key_hash     TEXT NOT NULL UNIQUE,
    key_prefix   TEXT NOT NULL,
    -- Space-separated scope values in the key's own order (no value contains a space).
    scopes       TEXT NOT NULL,
    expires_at   INTEGER,
    is_active    INTEGER NOT NULL CHECK (is_active IN (0, 1)),
    last_used_at INTEGER,
    revoked_at   INTEGER,
    created_at   INTEGER NOT NULL
);

-- (account_id, id) rather than account_id alone, so listing newest first needs no sort.
CREATE INDEX api_keys_account_id ON api_keys (account_id, id);

CREATE TABLE devices (
    id                TEXT NOT NULL PRIMARY KEY,
    account_id        TEXT NOT NULL,
    platform          TEXT NOT NULL,
    token             TEXT NOT NULL,
    name              TEXT,
    keys_p256dh       TEXT,
    keys_auth         TEXT,
    is_active         INTEGER NOT NULL CHECK (is_active IN (0, 1)),
    created_at        INTEGER NOT NULL,
    last_delivered_at INTEGER,
    UNIQUE (account_id, token),
    -- Web Push keys come as a pair; half a pair cannot be turned back into WebPushKeys.
    CHECK ((keys_p256dh IS NULL) = (keys_auth IS NULL))
);

CREATE INDEX devices_account_id ON devices (account_id, id);
