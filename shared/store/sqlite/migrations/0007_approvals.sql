-- Approvals of destructive calls on aacmcp's page (workspace policy approve,
-- shared/approval). One row per workspace and binding (the digest of what the
-- call must repeat); status moves pending -> granted|denied -> spent, each step
-- one conditional UPDATE. Times are Unix nanoseconds; rows past expires_at are
-- pruned by the insert path.
CREATE TABLE approvals (
    workspace_id TEXT    NOT NULL,
    binding      TEXT    NOT NULL,
    nonce        TEXT    NOT NULL,
    token        TEXT    NOT NULL,
    user_id      TEXT    NOT NULL,
    principal    TEXT    NOT NULL,
    client_id    TEXT    NOT NULL,
    tool         TEXT    NOT NULL,
    target       TEXT    NOT NULL,
    status       TEXT    NOT NULL,
    decided_by   TEXT    NOT NULL DEFAULT '',
    decided_from TEXT    NOT NULL DEFAULT '',
    requested_at INTEGER NOT NULL,
    decided_at   INTEGER NOT NULL DEFAULT 0,
    expires_at   INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, binding)
);
CREATE INDEX approvals_expiry ON approvals (expires_at);
