-- private_key_jwt client authentication (RFC 7523): a registered client's public
-- keys, and the client assertions already used, which may not be used again.
ALTER TABLE oauth_clients ADD COLUMN jwks_uri    TEXT NOT NULL DEFAULT '';
ALTER TABLE oauth_clients ADD COLUMN jwks        TEXT NOT NULL DEFAULT '';  -- a JSON Web Key Set
ALTER TABLE oauth_clients ADD COLUMN signing_alg TEXT NOT NULL DEFAULT '';

-- One row per assertion used, by the SHA-256 of its issuer and jti, kept until the
-- assertion expires: within its lifetime a second use is a replay.
CREATE TABLE oauth_assertions (
    hash       TEXT    NOT NULL PRIMARY KEY,
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX oauth_assertions_by_expiry ON oauth_assertions (expires_at);
