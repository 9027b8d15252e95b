-- 0018: outcomes recorded but not yet rolled up into their notifications.
-- The engine records a gateway's answers in a short transaction (the delivery
-- rows and one row here each), so that a crash repeats only what was answered
-- in the last ~100 ms, and derives the notifications' statuses afterwards, in
-- transactions of their own that delete these rows. What a crash leaves here is
-- rolled up when an engine starts, or by any engine once it is a lease old.

CREATE TABLE rollups (
    delivery_id     {id} NOT NULL PRIMARY KEY,
    notification_id {id} NOT NULL,
    recorded_at     {time} NOT NULL
);
