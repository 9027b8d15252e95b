-- 0010: the inbox, an entry per notification and recipient account, written
-- when the notification falls due (docs/architecture.md, "The inbox").
--
-- seq numbers entries in the order their transactions commit (writers of
-- entries take turns until COMMIT), so "every entry after N" never skips one
-- committed late; the public id is derived from it. A dismissed entry keeps
-- its row until retention, so that a later delivery of its notification
-- (another device, a retry) does not bring it back.

CREATE TABLE inbox (
    seq             {serial},
    account_id      {id} NOT NULL,
    notification_id {id} NOT NULL,
    delivered_at    {time} NOT NULL,
    read_at         {time},
    dismissed_at    {time},
    UNIQUE (notification_id, account_id)
);

-- A page of an inbox, and the entries after an id (replay, live channels).
CREATE INDEX inbox_account ON inbox (account_id, seq) WHERE dismissed_at IS NULL;
-- The unread count, and marking entries read.
CREATE INDEX inbox_unread ON inbox (account_id, seq)
    WHERE read_at IS NULL AND dismissed_at IS NULL;
