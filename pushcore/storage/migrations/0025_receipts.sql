-- 0025: what the deliveries list shows of each delivery beyond its status.
--
-- last_attempt_at: when a gateway last answered for it (a success, a failure
-- or a retry), delivered_at: when one accepted it (kept apart from settled_at,
-- which a later change of status may move), displayed_at and opened_at: the
-- first receipt of each kind (POST /api/receipts, or the inbox read by the
-- device's account). Null until each happens. No index: they are read with the
-- delivery row, by notification.

ALTER TABLE deliveries ADD COLUMN last_attempt_at {time};
ALTER TABLE deliveries ADD COLUMN delivered_at {time};
ALTER TABLE deliveries ADD COLUMN displayed_at {time};
ALTER TABLE deliveries ADD COLUMN opened_at {time};
