-- 0026: event webhooks. The events table is the outbox and the account's event log:
-- an event is inserted in the same transaction as the change it reports, with one
-- webhook_attempts row per endpoint subscribed to it, so a crash loses none and a
-- rolled-back change leaves none. The sender claims pending attempts (SKIP LOCKED
-- on PostgreSQL) and keeps each one's latest try on its row.

CREATE TABLE webhook_endpoints (
    id               {id} PRIMARY KEY,
    account_id       {id} NOT NULL,
    url              text NOT NULL,
    events           text NOT NULL,
    description      text,
    enabled          {bool} NOT NULL,
    secret           text NOT NULL,
    created_at       {time} NOT NULL,
    disabled_reason  text,
    old_secret       text,
    old_secret_until {time}
);
CREATE INDEX webhook_endpoints_account ON webhook_endpoints (account_id, id);

CREATE TABLE events (
    id              {id} PRIMARY KEY,
    account_id      {id} NOT NULL,
    type            text NOT NULL,
    created_at      {time} NOT NULL,
    data            text NOT NULL,
    notification_id {id}
);
CREATE INDEX events_account ON events (account_id, id);
CREATE INDEX events_notification ON events (notification_id);

CREATE TABLE webhook_attempts (
    endpoint_id     {id} NOT NULL,
    event_id        {id} NOT NULL,
    account_id      {id} NOT NULL,
    type            text NOT NULL,
    status          text NOT NULL,
    attempts        integer NOT NULL,
    created_at      {time} NOT NULL,
    next_attempt_at {time},
    attempted_at    {time},
    response_status integer,
    duration_ms     integer,
    lease_owner     text,
    lease_until     {time},
    PRIMARY KEY (endpoint_id, event_id)
);
CREATE INDEX webhook_attempts_due ON webhook_attempts (next_attempt_at);
CREATE INDEX webhook_attempts_event ON webhook_attempts (event_id);
