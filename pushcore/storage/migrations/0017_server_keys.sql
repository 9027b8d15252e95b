-- 0017: what every process on one database must share, by name. 'vapid' is
-- the Web Push (VAPID) key pair in PEM: a browser subscription is bound to the
-- key it was made with, so every process signs with the first one's pair
-- (gateways/vapid.py). Like the webhook devices' signing secrets, it is as
-- secret as the database itself.

CREATE TABLE server_keys (
    name       text NOT NULL PRIMARY KEY,
    value      text NOT NULL,
    created_at {time} NOT NULL
);
