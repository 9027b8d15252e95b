-- 0004: heartbeats of delivery engines (serve, worker), one row per engine,
-- so that a sender can tell whether any engine works this database's queue.

CREATE TABLE engines (
    id      {id} NOT NULL PRIMARY KEY,
    seen_at {time} NOT NULL
);
