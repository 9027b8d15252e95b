-- 0020: the key that makes a recurring schedule's occurrence one notification.
-- Whichever engine materialises an occurrence first inserts its row in the same
-- transaction as the notification; any other (a second worker, or the same one
-- again after kill -9 and a restart) meets the primary key and makes nothing.

CREATE TABLE schedule_occurrences (
    schedule_id     {id} NOT NULL,
    occurrence_at   {time} NOT NULL,
    notification_id {id} NOT NULL,
    created_at      {time} NOT NULL,
    PRIMARY KEY (schedule_id, occurrence_at)
);
