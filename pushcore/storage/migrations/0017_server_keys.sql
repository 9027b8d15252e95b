-- 0017: public facts every process on one database must agree on, by name.
-- 'vapid' holds the VAPID public key (never the private one, which stays in
-- the data directory): a browser subscription is bound to the key it was made
-- with, so a process that signs with another pair is refused at its start.

CREATE TABLE server_keys (
    name       text NOT NULL PRIMARY KEY,
    value      text NOT NULL,
    created_at {time} NOT NULL
);
