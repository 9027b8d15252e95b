-- 0001: accounts, API keys and devices.
--
-- Times are timestamptz: microseconds, compared as instants, so conditions
-- such as "last used before X" run in SQL and a time read back equals the
-- one written.
--
-- Ids sort with COLLATE "C" (byte order): lists are newest first by id and
-- the paging cursor compares ids, which must agree with Python's string
-- order whatever locale the database was created with.
--
-- There are no foreign keys to accounts: the store ports do not require an
-- account row before its keys or devices (the memory and SQLite stores do
-- not either), and one behaviour across adapters matters more here.

CREATE TABLE accounts (
    id         text COLLATE "C" PRIMARY KEY,
    plan       text NOT NULL,
    created_at timestamptz NOT NULL
);

CREATE TABLE api_keys (
    id           text COLLATE "C" PRIMARY KEY,
    account_id   text COLLATE "C" NOT NULL,
    name         text NOT NULL,
    key_hash     text NOT NULL UNIQUE,
    key_prefix   text NOT NULL,
    -- The key's own order is kept.
    scopes       text[] NOT NULL,
    expires_at   timestamptz,
    is_active    boolean NOT NULL,
    last_used_at timestamptz,
    revoked_at   timestamptz,
    created_at   timestamptz NOT NULL
);

-- (account_id, id) rather than account_id alone, so listing newest first needs no sort.
CREATE INDEX api_keys_account_id ON api_keys (account_id, id);

CREATE TABLE devices (
    id                text COLLATE "C" PRIMARY KEY,
    account_id        text COLLATE "C" NOT NULL,
    platform          text NOT NULL,
    token             text NOT NULL,
    name              text,
    keys_p256dh       text,
    keys_auth         text,
    is_active         boolean NOT NULL,
    created_at        timestamptz NOT NULL,
    last_delivered_at timestamptz,
    UNIQUE (account_id, token),
    -- Web Push keys come as a pair; half a pair cannot be turned back into WebPushKeys.
    CHECK ((keys_p256dh IS NULL) = (keys_auth IS NULL))
);

CREATE INDEX devices_account_id ON devices (account_id, id);
