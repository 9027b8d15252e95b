-- 0003: streams and subscriptions.
--
-- A deleted stream keeps its row (deleted_at set) so that its code stays
-- taken: a code someone shared must never lead to somebody else's stream.
-- The UNIQUE constraint on code is what decides a collision between two
-- creators drawing the same code at once.

CREATE TABLE streams (
    id          TEXT NOT NULL PRIMARY KEY,
    account_id  TEXT NOT NULL,
    name        TEXT NOT NULL,
    code        TEXT NOT NULL UNIQUE,
    description TEXT NOT NULL,
    icon_url    TEXT,
    created_at  INTEGER NOT NULL,
    deleted_at  INTEGER
);

CREATE INDEX streams_account ON streams (account_id, id) WHERE deleted_at IS NULL;

CREATE TABLE subscriptions (
    id         TEXT NOT NULL PRIMARY KEY,
    account_id TEXT NOT NULL,
    stream_id  TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    UNIQUE (account_id, stream_id)
);

CREATE INDEX subscriptions_stream ON subscriptions (stream_id);
CREATE INDEX subscriptions_account ON subscriptions (account_id, id);
