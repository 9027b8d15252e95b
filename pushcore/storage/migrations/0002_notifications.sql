-- 0002: notifications and their deliveries (the engine's queue).
--
-- A delivery is one notification on its way to one device. Schedulers claim
-- due PENDING deliveries under a lease (owner, lease_until); on PostgreSQL
-- with SELECT ... FOR UPDATE SKIP LOCKED, so several processes share the
-- queue without taking the same delivery. A crashed owner's IN_FLIGHT
-- deliveries are claimed again once the lease runs out. The partial indexes
-- keep the scheduler's two questions ("what is due?", "when is the next
-- one?") at index-lookup cost however long the backlog. device_id has no
-- foreign key: history outlives a removed device.

CREATE TABLE notifications (
    id                  {id} NOT NULL PRIMARY KEY,
    account_id          {id} NOT NULL,
    title               text NOT NULL,
    body                text NOT NULL,
    icon_style          text NOT NULL,
    sound               text NOT NULL,
    priority            text NOT NULL,
    delay               text NOT NULL,
    custom_delay        integer,
    target_device_token text,
    -- A JSON object of strings.
    metadata            {json} NOT NULL,
    scheduled_at        {time} NOT NULL,
    sender_name         text,
    sender_icon         text,
    status              text NOT NULL,
    created_at          {time} NOT NULL,
    devices_targeted    integer NOT NULL,
    failure_reason      text,
    stream_id           {id},
    stream_name         text,
    stream_code         text,
    wake_at             {time},
    settled_at          {time}
);

CREATE INDEX notifications_account ON notifications (account_id, id);
CREATE INDEX notifications_account_status ON notifications (account_id, status, id);
CREATE INDEX notifications_wake ON notifications (wake_at, id) WHERE wake_at IS NOT NULL;

CREATE TABLE deliveries (
    id              {id} NOT NULL PRIMARY KEY,
    notification_id {id} NOT NULL,
    account_id      {id} NOT NULL,
    device_id       {id} NOT NULL,
    status          text NOT NULL,
    due_at          {time} NOT NULL,
    attempts        integer NOT NULL DEFAULT 0,
    lease_owner     text,
    lease_until     {time},
    failure_reason  text,
    settled_at      {time}
);

CREATE INDEX deliveries_due ON deliveries (due_at, id) WHERE status = 'PENDING';
CREATE INDEX deliveries_lease ON deliveries (lease_until, id) WHERE status = 'IN_FLIGHT';
CREATE INDEX deliveries_notification ON deliveries (notification_id, status);
CREATE INDEX deliveries_device ON deliveries (device_id) WHERE status = 'PENDING';
CREATE INDEX deliveries_account ON deliveries (account_id, status);
