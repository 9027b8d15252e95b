-- 0019: a notification's revision, 1 at creation and +1 on each PATCH (If-Match names it).

ALTER TABLE notifications ADD COLUMN revision integer NOT NULL DEFAULT 1;
