-- 0013: sessions signed out before their access tokens expire. An access token
-- pushcore signs names its session (the `sid` claim: its refresh tokens' family);
-- signing out, a password change and a reused refresh token add a row here, and
-- every API process reads the rows still in force (until > now) at most every
-- 0.5 s to refuse those sessions' access tokens and end their live channels.
-- A row is kept until the session's last access token has expired (until), then
-- swept by retention.

CREATE TABLE session_revocations (
    session_id {id} NOT NULL PRIMARY KEY,
    account_id {id} NOT NULL,
    revoked_at {time} NOT NULL,
    until      {time} NOT NULL
);

CREATE INDEX session_revocations_until ON session_revocations (until);
