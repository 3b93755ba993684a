-- The OAuth 2.1 authorization server's state (store.OAuthStore), and what links it to
-- members and tokens. Secrets are stored only as hex SHA-256. Every record carries
-- its expiry; reads ignore expired rows and maybePurge deletes them.

-- The e-mail an upstream identity provider vouches for, lower-cased by Go
-- (Unicode-aware): sign-in maps a person to member records by it. '' for none.
ALTER TABLE members ADD COLUMN email TEXT NOT NULL DEFAULT '';
-- Sign-in looks a person up across workspaces, by e-mail or by user id: the only
-- queries that do not name a workspace.
CREATE INDEX members_by_email ON members (email, workspace_id, user_id) WHERE email <> '';
CREATE INDEX members_by_user ON members (user_id, workspace_id);

-- OAuth access tokens are rows of the tokens table; '' on personal tokens.
ALTER TABLE tokens ADD COLUMN client_id TEXT NOT NULL DEFAULT '';
ALTER TABLE tokens ADD COLUMN grant_id  TEXT NOT NULL DEFAULT '';

-- Dynamic Client Registration (RFC 7591). A client lapses when unused for
-- store.OAuthClientLapse: its expiry is last_used_at plus that.
CREATE TABLE oauth_clients (
    client_id                  TEXT    NOT NULL PRIMARY KEY,
    secret_hash                TEXT    NOT NULL,  -- '' for a public client
    name                       TEXT    NOT NULL,
    redirect_uris              TEXT    NOT NULL,  -- JSON array
    application_type           TEXT    NOT NULL,
    token_endpoint_auth_method TEXT    NOT NULL,
    grant_types                TEXT    NOT NULL,  -- JSON array
    client_uri                 TEXT    NOT NULL,
    source_ip                  TEXT    NOT NULL,
    created_at                 INTEGER NOT NULL,
    last_used_at               INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX oauth_clients_by_last_used ON oauth_clients (last_used_at);

-- Authorization requests between /oauth/authorize and the consent answer.
CREATE TABLE oauth_pending (
    id                TEXT    NOT NULL PRIMARY KEY,
    purpose           TEXT    NOT NULL,
    browser_hash      TEXT    NOT NULL,
    csrf_hash         TEXT    NOT NULL,
    client_id         TEXT    NOT NULL,
    client_name       TEXT    NOT NULL,
    redirect_uri      TEXT    NOT NULL,
    state             TEXT    NOT NULL,
    code_challenge    TEXT    NOT NULL,
    resource          TEXT    NOT NULL,
    scopes            TEXT    NOT NULL,  -- JSON array
    upstream_nonce    TEXT    NOT NULL,
    upstream_verifier TEXT    NOT NULL,
    subject           TEXT    NOT NULL,
    email             TEXT    NOT NULL,
    accounts          TEXT    NOT NULL,  -- JSON array of store.OAuthAccount
    created_at        INTEGER NOT NULL,
    expires_at        INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX oauth_pending_by_expiry ON oauth_pending (expires_at);

-- Authorization codes, by hash. used_at is set by the first redemption.
CREATE TABLE oauth_codes (
    hash           TEXT    NOT NULL PRIMARY KEY,
    grant_id       TEXT    NOT NULL,
    client_id      TEXT    NOT NULL,
    redirect_uri   TEXT    NOT NULL,
    code_challenge TEXT    NOT NULL,
    resource       TEXT    NOT NULL,
    scopes         TEXT    NOT NULL,  -- JSON array
    workspace_id   TEXT    NOT NULL,
    user_id        TEXT    NOT NULL,
    created_at     INTEGER NOT NULL,
    expires_at     INTEGER NOT NULL,
    used_at        INTEGER
) WITHOUT ROWID;
CREATE INDEX oauth_codes_by_expiry ON oauth_codes (expires_at);

-- Grants: what a person allowed one client in one workspace. No foreign key to
-- clients: a client identified by a metadata document has no row.
CREATE TABLE oauth_grants (
    id               TEXT    NOT NULL PRIMARY KEY,
    client_id        TEXT    NOT NULL,
    client_name      TEXT    NOT NULL,
    workspace_id     TEXT    NOT NULL,
    user_id          TEXT    NOT NULL,
    scopes           TEXT    NOT NULL,  -- JSON array
    resource         TEXT    NOT NULL,
    refresh_hash     TEXT    NOT NULL,  -- the current refresh token; '' before the code is redeemed
    access_token_ids TEXT    NOT NULL,  -- JSON array
    created_at       INTEGER NOT NULL,
    last_used_at     INTEGER NOT NULL,
    expires_at       INTEGER NOT NULL,
    revoked_at       INTEGER
) WITHOUT ROWID;
CREATE UNIQUE INDEX oauth_grants_by_refresh ON oauth_grants (refresh_hash) WHERE refresh_hash <> '';
CREATE INDEX oauth_grants_by_created ON oauth_grants (created_at DESC, id DESC);
CREATE INDEX oauth_grants_by_workspace ON oauth_grants (workspace_id, created_at DESC, id DESC);
CREATE INDEX oauth_grants_by_user ON oauth_grants (user_id, created_at DESC, id DESC);
CREATE INDEX oauth_grants_by_expiry ON oauth_grants (expires_at);

-- Refresh tokens a grant has rotated away from: a second use of one is the theft
-- signal that revokes the grant, so they live exactly as long as it does.
CREATE TABLE oauth_rotated (
    hash       TEXT    NOT NULL PRIMARY KEY,
    grant_id   TEXT    NOT NULL REFERENCES oauth_grants (id) ON DELETE CASCADE,
    rotated_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX oauth_rotated_by_grant ON oauth_rotated (grant_id);

-- Which clients may connect: one row, absent until an admin sets it (mode 'any').
CREATE TABLE oauth_policy (
    id      INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    mode    TEXT    NOT NULL CHECK (mode IN ('any', 'allowlist')),
    allowed TEXT    NOT NULL  -- JSON array of client ids
);
