-- The 20 slowest tool calls of a period, slowest first, with who made them.
-- Runs unchanged on Athena (Trino) and on DuckDB (`aacmcp audit report`).
-- Parameters, in order (Athena ExecutionParameters, bound the same way locally): the
-- period's start and end as ISO 8601 UTC timestamp literals ('2026-12-01T00:00:00Z'),
-- start included, end excluded; and a workspace id, '' for every workspace.
-- audit_log: in Athena, the table of that name in the Glue database the workgroup
-- queries (columns = events/audit/record.schema.json, partitions dt and hour as
-- strings); locally, the DuckDB view over <data>/audit. Delivery is at-least-once,
-- so rows are deduplicated by event_id first. The dt bounds prune partitions.
-- Tool calls only: authorization events (event_type 'authorization') share the
-- table; records of version 1.0 have no event_type (NULL) and are tool calls.
WITH params AS (
    -- The partition bounds are computed here, once, not beside every row.
    SELECT t_from, t_to, workspace, date_format(t_from, '%Y-%m-%d') AS dt_from, date_format(t_to, '%Y-%m-%d') AS dt_to
    FROM (SELECT from_iso8601_timestamp(?) AS t_from, from_iso8601_timestamp(?) AS t_to, CAST(? AS varchar) AS workspace) AS bound
),
calls AS (
    SELECT DISTINCT
        "timestamp", event_id, tool, outcome, reason, duration_ms, workspace_id, user_id, token_id,
        coalesce(client_id, '') AS client_id
    FROM audit_log CROSS JOIN params p
    WHERE dt BETWEEN p.dt_from AND p.dt_to
      AND from_iso8601_timestamp("timestamp") >= p.t_from AND from_iso8601_timestamp("timestamp") < p.t_to
      AND (p.workspace = '' OR workspace_id = p.workspace)
      AND coalesce(event_type, 'tool_call') = 'tool_call'
)
SELECT "timestamp", tool, outcome, reason, duration_ms, workspace_id, user_id, token_id, client_id, event_id
FROM calls
ORDER BY duration_ms DESC, "timestamp" DESC, event_id
LIMIT 20
