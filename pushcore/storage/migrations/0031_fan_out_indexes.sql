-- 0031: a stream send's fan-out (issue 29: 100,000 subscribers accepted within
-- a second) reads its subscribers and their active devices from indexes alone.
--
-- (stream_id, account_id) covers "the stream's subscribers" without a visit to
-- each subscription's row, and gives them in account order, the order the
-- inbox's fan-out inserts in (no sort); it answers everything the index on
-- stream_id alone did. The active devices' index holds each device's id under
-- its account: the fan-out's join no longer reads each device's row to learn
-- whether it is active.

CREATE INDEX subscriptions_stream_account ON subscriptions (stream_id, account_id);
DROP INDEX subscriptions_stream;
CREATE INDEX devices_active ON devices (account_id, id) WHERE is_active = TRUE;
