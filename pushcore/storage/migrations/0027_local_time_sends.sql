-- 0027: local-time sends (API.md, "The recipient's time"): a notification's
-- `deliverAt` as JSON text (["09:00", "2026-12-24"], or ["09:00", null]), kept
-- so that a view shows it and an edit can work it out again for each
-- recipient. Each delivery already has its own due_at (0002): a local-time send
-- gives each the wall-clock time in its recipient's zone, and the engine's
-- claim (deliveries_due) takes them one by one as they fall due.

ALTER TABLE notifications ADD COLUMN deliver_at text;
