-- Human confirmation of destructive calls (shared/confirm). The policy is a column
-- of the workspace record; '' reads as the default, flag. A sealed requestState is
-- single use: its nonce is inserted here once, and a second insert conflicts.
-- Rows past expires_at (Unix nanoseconds) are replaced by a new insert of the same
-- nonce and otherwise pruned by the insert path.
ALTER TABLE workspaces ADD COLUMN destructive_confirmation TEXT NOT NULL DEFAULT '';
CREATE TABLE confirmation_nonces (
    workspace_id TEXT    NOT NULL,
    nonce        TEXT    NOT NULL,
    expires_at   INTEGER NOT NULL,
    PRIMARY KEY (workspace_id, nonce)
);
CREATE INDEX confirmation_nonces_expiry ON confirmation_nonces (expires_at);
