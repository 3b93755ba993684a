-- flushes counts the usage flushes that committed, in the same transaction as their
-- increments. ListUsage reads it with the counters, in one statement, to tell which
-- of the increments it holds in memory the counters already include (counters.go).
ALTER TABLE usage_watermark ADD COLUMN flushes INTEGER NOT NULL DEFAULT 0;
