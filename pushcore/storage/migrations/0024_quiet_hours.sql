-- 0024: the recipient's time (API.md): an account's zone, quiet hours and
-- snooze, a subscription's mute, and deliveries held until quiet ends.
--
-- The settings are columns of the rows they belong to: the engine reads those
-- of a claim's receiving accounts in one primary-key lookup. A HELD delivery
-- keeps its own due_at (the order in which held ones go out) and waits for
-- held_until; its partial index answers "which are released now?" and "when is
-- the next release?" as deliveries_due does for PENDING ones.

ALTER TABLE accounts ADD COLUMN time_zone text;
-- quietHours as the API shows it (JSON text), or NULL.
ALTER TABLE accounts ADD COLUMN quiet_hours text;
ALTER TABLE accounts ADD COLUMN snooze_until {time};

ALTER TABLE subscriptions ADD COLUMN muted_until {time};
ALTER TABLE subscriptions ADD COLUMN allow_critical {bool} NOT NULL DEFAULT TRUE;

ALTER TABLE deliveries ADD COLUMN held_until {time};
CREATE INDEX deliveries_held ON deliveries (held_until, due_at, id) WHERE status = 'HELD';
CREATE INDEX deliveries_held_device ON deliveries (device_id) WHERE status = 'HELD';
