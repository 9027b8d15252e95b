-- 0005: Idempotency-Key records: per account and key, the request that
-- claimed the key (a hash of its method, path and body) and, once answered,
-- its status and body, replayed for 24 hours.
--
-- The primary key decides a claim: an INSERT that meets another request's
-- row does not claim, in whichever process it runs. The answer columns are
-- set together or not at all.

CREATE TABLE idempotency_keys (
    account_id      {id} NOT NULL,
    idempotency_key text NOT NULL,
    request_hash    text NOT NULL,
    status          integer,
    body            text,
    created_at      {time} NOT NULL,
    completed_at    {time},
    PRIMARY KEY (account_id, idempotency_key),
    CHECK ((status IS NULL) = (completed_at IS NULL)),
    CHECK ((body IS NULL) = (completed_at IS NULL))
);

-- Deleting the old records, oldest first, without a scan.
CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);
