-- Times are INTEGER Unix nanoseconds (UTC): exact round trips, cheap comparisons.
-- Every tenant table leads with workspace_id, so every index is per workspace and
-- no query can cross tenants without naming one.

CREATE TABLE workspaces (
    id         TEXT    NOT NULL PRIMARY KEY,
    key        TEXT    NOT NULL,             -- issue key prefix, e.g. AAC
    name       TEXT    NOT NULL,
    issue_seq  INTEGER NOT NULL DEFAULT 0,   -- last allocated issue number
    created_at INTEGER NOT NULL
);

CREATE TABLE members (
    workspace_id TEXT    NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    user_id      TEXT    NOT NULL,
    role         TEXT    NOT NULL CHECK (role IN ('viewer', 'member', 'admin')),
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, user_id)
) WITHOUT ROWID;

CREATE TABLE agents (
    workspace_id TEXT    NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    id           TEXT    NOT NULL,
    name         TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, id)
) WITHOUT ROWID;

CREATE TABLE issues (
    workspace_id  TEXT    NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    id            TEXT    NOT NULL,
    seq           INTEGER NOT NULL,          -- the number in the key
    key           TEXT    NOT NULL,
    title         TEXT    NOT NULL,
    description   TEXT    NOT NULL,
    -- Lower-cased copies for the case-insensitive query filter. Go lower-cases them
    -- (Unicode-aware; SQLite's lower() only knows ASCII).
    title_fold    TEXT    NOT NULL,
    desc_fold     TEXT    NOT NULL,
    status        TEXT    NOT NULL,
    priority      TEXT    NOT NULL,
    labels        TEXT    NOT NULL,          -- JSON array, also exploded into issue_labels
    assignee_type TEXT,
    assignee_id   TEXT,
    created_by    TEXT    NOT NULL,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    version       INTEGER NOT NULL,
    comment_count INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (workspace_id, id)
);
CREATE UNIQUE INDEX issues_by_seq ON issues (workspace_id, seq);
CREATE INDEX issues_by_updated ON issues (workspace_id, updated_at DESC, id DESC);
CREATE INDEX issues_by_status ON issues (workspace_id, status, updated_at DESC, id DESC);
CREATE INDEX issues_by_assignee ON issues (workspace_id, assignee_id, updated_at DESC, id DESC)
    WHERE assignee_id IS NOT NULL;

-- One row per label of an issue, carrying the issue's updated_at: a label filter
-- walks (label, updated_at) in list order instead of testing every issue.
CREATE TABLE issue_labels (
    workspace_id TEXT    NOT NULL,
    label        TEXT    NOT NULL,
    issue_id     TEXT    NOT NULL,
    updated_at   INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, label, issue_id),
    FOREIGN KEY (workspace_id, issue_id) REFERENCES issues (workspace_id, id) ON DELETE CASCADE
) WITHOUT ROWID;
CREATE INDEX issue_labels_by_updated ON issue_labels (workspace_id, label, updated_at DESC, issue_id DESC);
CREATE INDEX issue_labels_by_issue ON issue_labels (workspace_id, issue_id);

CREATE TABLE comments (
    workspace_id TEXT    NOT NULL,
    id           TEXT    NOT NULL,
    issue_id     TEXT    NOT NULL,
    author       TEXT    NOT NULL,
    body         TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, id),
    FOREIGN KEY (workspace_id, issue_id) REFERENCES issues (workspace_id, id) ON DELETE CASCADE
);
CREATE INDEX comments_by_issue ON comments (workspace_id, issue_id, created_at, id);

CREATE TABLE autopilot_runs (
    workspace_id TEXT    NOT NULL,
    id           TEXT    NOT NULL,
    issue_id     TEXT    NOT NULL,
    issue_key    TEXT    NOT NULL,
    status       TEXT    NOT NULL,
    instructions TEXT    NOT NULL,
    requested_by TEXT    NOT NULL,
    attempts     INTEGER NOT NULL,
    error        TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, id),
    FOREIGN KEY (workspace_id, issue_id) REFERENCES issues (workspace_id, id) ON DELETE CASCADE
);
CREATE INDEX autopilot_runs_by_issue ON autopilot_runs (workspace_id, issue_id);

-- What a delete answered, so a repeat can answer the same (docs/architecture.md section 2). issue_seq
-- lets a repeat name the issue by key; keys are never reused (issue_seq only grows).
CREATE TABLE tombstones (
    workspace_id TEXT    NOT NULL,
    id           TEXT    NOT NULL,
    kind         TEXT    NOT NULL CHECK (kind IN ('issue', 'comment')),
    issue_seq    INTEGER,
    owner        TEXT    NOT NULL DEFAULT '',  -- created_by / author: a repeat is judged like the first delete
    deleted_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, kind, id)
);
CREATE UNIQUE INDEX tombstones_by_seq ON tombstones (workspace_id, issue_seq) WHERE issue_seq IS NOT NULL;
CREATE INDEX tombstones_by_expiry ON tombstones (expires_at);

CREATE TABLE idempotency (
    workspace_id TEXT    NOT NULL,
    user_id      TEXT    NOT NULL,
    tool         TEXT    NOT NULL,
    key_hash     TEXT    NOT NULL,
    state        TEXT    NOT NULL,
    args_digest  TEXT    NOT NULL,
    result       BLOB,
    resource_id  TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, user_id, tool, key_hash)
) WITHOUT ROWID;
CREATE INDEX idempotency_by_expiry ON idempotency (expires_at);

CREATE TABLE usage_daily (
    workspace_id TEXT    NOT NULL,
    date         TEXT    NOT NULL,           -- YYYY-MM-DD (UTC)
    tool         TEXT    NOT NULL,
    calls        INTEGER NOT NULL DEFAULT 0,
    denied       INTEGER NOT NULL DEFAULT 0,
    errors       INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (workspace_id, date, tool)
) WITHOUT ROWID;

-- Event ids already counted, so a retried UpdateUsage does not count twice.
CREATE TABLE usage_events (
    event_id   TEXT    NOT NULL PRIMARY KEY,
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX usage_events_by_expiry ON usage_events (expires_at);

CREATE TABLE rate_counters (
    workspace_id TEXT    NOT NULL,
    key          TEXT    NOT NULL,
    window_start INTEGER NOT NULL,
    count        INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, key, window_start)
) WITHOUT ROWID;
CREATE INDEX rate_counters_by_expiry ON rate_counters (expires_at);

-- Tokens: the same file, their own table (on AWS their own DynamoDB table). No
-- foreign key to workspaces, as on AWS: the tokens table is read by the authorizer alone.
CREATE TABLE tokens (
    hash         TEXT    NOT NULL PRIMARY KEY,  -- hex SHA-256 of the secret
    token_id     TEXT    NOT NULL UNIQUE,
    name         TEXT    NOT NULL,
    workspace_id TEXT    NOT NULL,
    user_id      TEXT    NOT NULL,
    scopes       TEXT    NOT NULL,              -- JSON array
    created_at   INTEGER NOT NULL,
    expires_at   INTEGER NOT NULL,
    revoked_at   INTEGER
) WITHOUT ROWID;
CREATE INDEX tokens_by_workspace ON tokens (workspace_id, created_at DESC, token_id DESC);
CREATE INDEX tokens_by_created ON tokens (created_at DESC, token_id DESC);
