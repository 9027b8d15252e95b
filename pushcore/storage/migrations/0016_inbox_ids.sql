-- 0016: inbox entries get a public id that reveals nothing (API.md, "People-side
-- limits": ids sort by creation time, never a count). Until now an entry's id was
-- its seq in base32, so it counted every account's entries. seq stays, for the
-- order of commits that resuming a live channel relies on; the public id is
-- "inb_", the creation time in milliseconds (12 hex digits) and 80 random bits
-- (20 hex digits), unique per account (pushcore/domain/inbox.py).

ALTER TABLE inbox ADD COLUMN public_id {id};

UPDATE inbox SET public_id = 'inb_' || {millis_hex:delivered_at} || {random_hex:10};

-- An id given by a client, looked up in its own account (and, for an id gone by
-- retention, the latest entry created before it).
CREATE UNIQUE INDEX inbox_public_id ON inbox (account_id, public_id);
