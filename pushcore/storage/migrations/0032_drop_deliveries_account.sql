-- 0032: no statement reads deliveries by account since the accounts' counts are
-- kept as they change (notification_counts, 0005), yet every change of a
-- delivery's status rewrote its entry in (account_id, status): for a stream send
-- to 100,000 people, each with an account of their own, a claim or a record of
-- one zone's 2,500 deliveries touched ~2,000 scattered pages of this index alone.
-- Without it, a record costs 5.5 µs a delivery instead of 11 and its commit 1.4 ms
-- instead of 14 (docs/benchmarks.md, "Local-time sends").

DROP INDEX deliveries_account;
