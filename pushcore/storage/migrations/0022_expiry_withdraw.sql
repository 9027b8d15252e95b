-- 0022: expiry and withdrawal (API.md, "After sending").
--
-- ttl is kept as given so that a PATCH of the due time moves expires_at with it;
-- expires_at is what the engine and the inbox go by. withdrawn_at is set once:
-- a second withdrawal answers the first. A delivery's kind says what its next
-- send carries: the notification, or (once withdrawn) the withdrawal of one it
-- delivered, queued in the same row so that no accepted withdrawal is lost.

ALTER TABLE notifications ADD COLUMN ttl integer;
ALTER TABLE notifications ADD COLUMN expires_at {time};
ALTER TABLE notifications ADD COLUMN withdrawn_at {time};
ALTER TABLE deliveries ADD COLUMN kind text NOT NULL DEFAULT 'notification';
-- An inbox entry leaves at its notification's expires_at, copied in when the entry is
-- written so that the sweep that takes it out is one range of this index.
ALTER TABLE inbox ADD COLUMN expires_at {time};
CREATE INDEX inbox_expiry ON inbox (expires_at) WHERE expires_at IS NOT NULL;
