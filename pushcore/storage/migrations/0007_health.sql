-- 0007: the row /readyz writes, so that "ready" means the database takes a
-- write (a full disk or a read-only server is not ready), without touching
-- any table the service's own work uses.

CREATE TABLE health (
    id         {id} NOT NULL PRIMARY KEY,
    checked_at {time} NOT NULL
);
