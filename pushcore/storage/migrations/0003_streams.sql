-- 0003: streams and subscriptions.
--
-- A deleted stream keeps its row (deleted_at set) so that its code stays
-- taken: a code someone shared must never lead to somebody else's stream.
-- The UNIQUE constraint on code is what decides a collision between two
-- creators drawing the same code at once.

CREATE TABLE streams (
    id          {id} NOT NULL PRIMARY KEY,
    account_id  {id} NOT NULL,
    name        text NOT NULL,
    code        text NOT NULL UNIQUE,
    description text NOT NULL,
    icon_url    text,
    created_at  {time} NOT NULL,
    deleted_at  {time}
);

CREATE INDEX streams_account ON streams (account_id, id) WHERE deleted_at IS NULL;

CREATE TABLE subscriptions (
    id         {id} NOT NULL PRIMARY KEY,
    account_id {id} NOT NULL,
    stream_id  {id} NOT NULL,
    created_at {time} NOT NULL,
    UNIQUE (account_id, stream_id)
);

CREATE INDEX subscriptions_stream ON subscriptions (stream_id);
CREATE INDEX subscriptions_account ON subscriptions (account_id, id);
