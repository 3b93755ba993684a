-- Usage increments are committed by a background flusher a moment after the call
-- they count (counters.go). After a crash, the ones it had not committed yet are
-- rebuilt from the audit log: replay_from (Unix nanoseconds) is the earliest event
-- time that may still lack its increment, minus a safety slack. One row, written
-- by every flush in the same transaction as the increments it commits.
CREATE TABLE usage_watermark (
    id          INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    replay_from INTEGER NOT NULL
);
