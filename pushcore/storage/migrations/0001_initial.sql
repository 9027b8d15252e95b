-- 0001: accounts, API keys and devices.
--
-- Written once for both databases: {id}, {time}, {bool}, {json} and {scopes}
-- are each database's own types (pushcore/storage/migrate.py). Times compare
-- as instants in SQL, so conditions such as "last used before X" run there.
-- Ids sort in byte order, which lists (newest first by id) and the paging
-- cursor rely on; NOT NULL is spelled out because SQLite, for historical
-- reasons, accepts NULL in a text PRIMARY KEY. A boolean's CHECK holds
-- SQLite's integers to 0 and 1.
--
-- There are no foreign keys to accounts: the store ports do not require an
-- account row before its keys or devices, and one behaviour across
-- databases matters more here.

CREATE TABLE accounts (
    id         {id} NOT NULL PRIMARY KEY,
    plan       text NOT NULL,
    created_at {time} NOT NULL
);

CREATE TABLE api_keys (
    id           {id} NOT NULL PRIMARY KEY,
    account_id   {id} NOT NULL,
    name         text NOT NULL,
    key_hash     text NOT NULL UNIQUE,
    key_prefix   text NOT NULL,
    -- The key's own order is kept.
    scopes       {scopes} NOT NULL,
    expires_at   {time},
    is_active    {bool} NOT NULL CHECK (is_active IN (FALSE, TRUE)),
    last_used_at {time},
    revoked_at   {time},
    created_at   {time} NOT NULL
);

-- (account_id, id) rather than account_id alone, so listing newest first needs no sort.
CREATE INDEX api_keys_account_id ON api_keys (account_id, id);

CREATE TABLE devices (
    id                {id} NOT NULL PRIMARY KEY,
    account_id        {id} NOT NULL,
    platform          text NOT NULL,
    token             text NOT NULL,
    name              text,
    keys_p256dh       text,
    keys_auth         text,
    is_active         {bool} NOT NULL CHECK (is_active IN (FALSE, TRUE)),
    created_at        {time} NOT NULL,
    last_delivered_at {time},
    UNIQUE (account_id, token),
    -- Web Push keys come as a pair; half a pair cannot be turned back into WebPushKeys.
    CHECK ((keys_p256dh IS NULL) = (keys_auth IS NULL))
);

CREATE INDEX devices_account_id ON devices (account_id, id);
