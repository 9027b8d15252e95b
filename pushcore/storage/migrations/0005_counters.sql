-- 0005: notification counts kept as they change, and the index retention deletes by.
--
-- GET /api/notifications/stats used to count an account's whole history
-- (54 ms at 100,000 notifications). notification_counts holds one row per
-- account (notifications by status, deliveries by status; IN_FLIGHT is
-- pending), notification_activity one row per account and minute with the
-- notifications created, delivered and failed in it, so the last 24 hours
-- are at most 1,441 rows. The repositories keep both up to date in the
-- transactions that change the counted rows (pushcore/storage/sql/counters.py);
-- this migration counts what is there once. Buckets older than a day are
-- pruned by the engine's retention task.

CREATE TABLE notification_counts (
    account_id           {id} NOT NULL PRIMARY KEY,
    scheduled            integer NOT NULL DEFAULT 0,
    queued               integer NOT NULL DEFAULT 0,
    delivered            integer NOT NULL DEFAULT 0,
    failed               integer NOT NULL DEFAULT 0,
    cancelled            integer NOT NULL DEFAULT 0,
    deliveries_pending   integer NOT NULL DEFAULT 0,
    deliveries_delivered integer NOT NULL DEFAULT 0,
    deliveries_failed    integer NOT NULL DEFAULT 0,
    deliveries_cancelled integer NOT NULL DEFAULT 0
);

CREATE TABLE notification_activity (
    account_id {id} NOT NULL,
    -- The start of the minute (UTC).
    minute     {time} NOT NULL,
    created    integer NOT NULL DEFAULT 0,
    delivered  integer NOT NULL DEFAULT 0,
    failed     integer NOT NULL DEFAULT 0,
    PRIMARY KEY (account_id, minute)
);

-- For pruning the buckets older than any window.
CREATE INDEX notification_activity_minute ON notification_activity (minute);

-- Retention finds settled notifications oldest first without reading the rest.
CREATE INDEX notifications_settled ON notifications (settled_at, id) WHERE settled_at IS NOT NULL;

INSERT INTO notification_counts (account_id, scheduled, queued, delivered, failed, cancelled,
    deliveries_pending, deliveries_delivered, deliveries_failed, deliveries_cancelled)
SELECT account_id, SUM(s), SUM(q), SUM(d), SUM(f), SUM(c), SUM(dp), SUM(dd), SUM(df), SUM(dc)
FROM (
    SELECT account_id,
        CASE status WHEN 'SCHEDULED' THEN 1 ELSE 0 END AS s,
        CASE status WHEN 'QUEUED' THEN 1 ELSE 0 END AS q,
        CASE status WHEN 'DELIVERED' THEN 1 ELSE 0 END AS d,
        CASE status WHEN 'FAILED' THEN 1 ELSE 0 END AS f,
        CASE status WHEN 'CANCELLED' THEN 1 ELSE 0 END AS c,
        0 AS dp, 0 AS dd, 0 AS df, 0 AS dc
    FROM notifications
    UNION ALL
    SELECT account_id, 0, 0, 0, 0, 0,
        CASE WHEN status IN ('PENDING', 'IN_FLIGHT') THEN 1 ELSE 0 END,
        CASE status WHEN 'DELIVERED' THEN 1 ELSE 0 END,
        CASE status WHEN 'FAILED' THEN 1 ELSE 0 END,
        CASE status WHEN 'CANCELLED' THEN 1 ELSE 0 END
    FROM deliveries
) AS rows_by_account
GROUP BY account_id;

-- Only the buckets a window can still reach (a day, and an hour to spare).
INSERT INTO notification_activity (account_id, minute, created, delivered, failed)
SELECT account_id, minute, SUM(created), SUM(delivered), SUM(failed)
FROM (
    SELECT account_id, {minute:created_at} AS minute, 1 AS created, 0 AS delivered, 0 AS failed
    FROM notifications WHERE created_at >= {hours_ago:25}
    UNION ALL
    SELECT account_id, {minute:settled_at},
        0, CASE status WHEN 'DELIVERED' THEN 1 ELSE 0 END,
        CASE status WHEN 'FAILED' THEN 1 ELSE 0 END
    FROM notifications
    WHERE status IN ('DELIVERED', 'FAILED') AND settled_at >= {hours_ago:25}
) AS rows_by_minute
GROUP BY account_id, minute;
