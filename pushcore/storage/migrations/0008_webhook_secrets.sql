-- 0008: the signing secret of a webhook device (Standard Webhooks): whsec_ and the
-- base64 of 24 random bytes, made at each registration of the device; NULL for other
-- platforms and for webhook devices registered before this (they are sent unsigned
-- until registered again).

ALTER TABLE devices ADD COLUMN webhook_secret text;
