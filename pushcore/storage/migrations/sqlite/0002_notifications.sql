-- 0002: notifications and their deliveries (the engine's queue).
--
-- A delivery is one notification on its way to one device. The scheduler
-- claims due PENDING deliveries under a lease (owner, lease_until); a crashed
-- owner's IN_FLIGHT deliveries are claimed again once the lease runs out.
-- The partial indexes keep the scheduler's two questions ("what is due?",
-- "when is the next one?") at index-lookup cost however long the backlog.
-- device_id has no foreign key: history outlives a removed device.

CREATE TABLE notifications (
    id                  TEXT NOT NULL PRIMARY KEY,
    account_id          TEXT NOT NULL,
    title               TEXT NOT NULL,
    body                TEXT NOT NULL,
    icon_style          TEXT NOT NULL,
    sound               TEXT NOT NULL,
    priority            TEXT NOT NULL,
    delay               TEXT NOT NULL,
    custom_delay        INTEGER,
    target_device_token TEXT,
    -- A JSON object of strings.
    metadata            TEXT NOT NULL,
    scheduled_at        INTEGER NOT NULL,
    sender_name         TEXT,
    sender_icon         TEXT,
    status              TEXT NOT NULL,
    created_at          INTEGER NOT NULL,
    devices_targeted    INTEGER NOT NULL,
    failure_reason      TEXT,
    stream_id           TEXT,
    stream_name         TEXT,
    stream_code         TEXT,
    wake_at             INTEGER,
    settled_at          INTEGER
);

CREATE INDEX notifications_account ON notifications (account_id, id);
CREATE INDEX notifications_account_status ON notifications (account_id, status, id);
CREATE INDEX notifications_wake ON notifications (wake_at, id) WHERE wake_at IS NOT NULL;

CREATE TABLE deliveries (
    id              TEXT NOT NULL PRIMARY KEY,
    notification_id TEXT NOT NULL,
    account_id      TEXT NOT NULL,
    device_id       TEXT NOT NULL,
    status          TEXT NOT NULL,
    due_at          INTEGER NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    lease_owner     TEXT,
    lease_until     INTEGER,
    failure_reason  TEXT,
    settled_at      INTEGER
);

CREATE INDEX deliveries_due ON deliveries (due_at, id) WHERE status = 'PENDING';
CREATE INDEX deliveries_lease ON deliveries (lease_until, id) WHERE status = 'IN_FLIGHT';
CREATE INDEX deliveries_notification ON deliveries (notification_id, status);
CREATE INDEX deliveries_device ON deliveries (device_id) WHERE status = 'PENDING';
CREATE INDEX deliveries_account ON deliveries (account_id, status);
