-- Tool calls per hour (UTC) of a period by outcome (success, denied, error, and asked for a question put to a person): the report's first section.
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
-- A question put to a person (reason human_confirmation_required with confirmation
-- elicited: the first half of every delete under the elicit and require policies)
-- refuses nothing: it is counted as asked, not as denied. Records before 1.3 have no
-- confirmation (NULL).
WITH params AS (
    -- The partition bounds are computed here, once, not beside every row.
    SELECT t_from, t_to, workspace, date_format(t_from, '%Y-%m-%d') AS dt_from, date_format(t_to, '%Y-%m-%d') AS dt_to
    FROM (SELECT from_iso8601_timestamp(?) AS t_from, from_iso8601_timestamp(?) AS t_to, CAST(? AS varchar) AS workspace) AS bound
),
calls AS (
    SELECT DISTINCT
        event_id,
        date_trunc('hour', from_iso8601_timestamp("timestamp")) AS hour_start,
        CASE WHEN reason = 'human_confirmation_required' AND coalesce(confirmation, '') = 'elicited' THEN 'asked' ELSE outcome END AS outcome
    FROM audit_log CROSS JOIN params p
    WHERE dt BETWEEN p.dt_from AND p.dt_to
      AND from_iso8601_timestamp("timestamp") >= p.t_from AND from_iso8601_timestamp("timestamp") < p.t_to
      AND (p.workspace = '' OR workspace_id = p.workspace)
      AND coalesce(event_type, 'tool_call') = 'tool_call'
)
-- The hour is formatted after grouping: once a group, not once a row.
SELECT date_format(hour_start, '%Y-%m-%d %H:00') AS hour_utc, outcome, count(*) AS calls
FROM calls
GROUP BY hour_start, outcome
ORDER BY hour_utc, outcome
