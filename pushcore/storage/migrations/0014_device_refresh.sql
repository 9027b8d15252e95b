-- 0014: when a device was last registered (or registered again with the same
-- token). Retention removes `live` devices neither refreshed nor delivered to
-- for 30 days (API.md "People-side limits"); devices from before this
-- migration count from their creation.

ALTER TABLE devices ADD COLUMN refreshed_at {time};

CREATE INDEX devices_live_refreshed ON devices (platform, refreshed_at);
