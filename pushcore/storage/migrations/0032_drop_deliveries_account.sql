-- 0032: no statement reads deliveries by account since the accounts' counts are
-- kept as they change (notification_counts, 0005), yet every change of a
-- delivery's status rewrote its entry in (account_id, status). Without it, a
-- settle of 2,500 deliveries costs 5.6 µs a delivery instead of 7.4 and a claim
-- 12-15 µs instead of 16-17 (docs/benchmarks.md, "Local-time sends").

DROP INDEX deliveries_account;
