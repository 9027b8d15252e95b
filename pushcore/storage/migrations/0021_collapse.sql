-- 0021: collapse keys. A newer notification of an account with the same key
-- replaces the older: not yet sent, it is superseded; sent, its inbox entries
-- give way to the newer's (replaces names the old entry, replaced_at hides it).

ALTER TABLE notifications ADD COLUMN collapse_key text;
ALTER TABLE notifications ADD COLUMN renotify {bool} NOT NULL DEFAULT TRUE;
ALTER TABLE notifications ADD COLUMN supersedes {id};
CREATE INDEX notifications_collapse ON notifications (account_id, collapse_key, id)
    WHERE collapse_key IS NOT NULL;
ALTER TABLE inbox ADD COLUMN replaces text;
ALTER TABLE inbox ADD COLUMN replaced_at {time};
