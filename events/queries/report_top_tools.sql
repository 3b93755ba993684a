-- Tool calls of a period per tool: calls, denials, errors, and the 95th percentile and maximum of duration_ms.
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
-- p95_ms is the nearest-rank percentile: the duration at rank ceil(0.95 n) of the
-- tool's n calls in duration order, computed with integer arithmetic. Exact on both
-- engines, where Athena's approx_percentile and DuckDB's approx_quantile are
-- different sketches and would give different numbers. Every call counts, denied
-- ones included: they are what the caller waited for. Requests turned away for
-- their token have no tool and are left out.
WITH params AS (
    -- The partition bounds are computed here, once, not beside every row.
    SELECT t_from, t_to, workspace, date_format(t_from, '%Y-%m-%d') AS dt_from, date_format(t_to, '%Y-%m-%d') AS dt_to
    FROM (SELECT from_iso8601_timestamp(?) AS t_from, from_iso8601_timestamp(?) AS t_to, CAST(? AS varchar) AS workspace) AS bound
),
calls AS (
    SELECT DISTINCT event_id, tool, outcome, duration_ms
    FROM audit_log CROSS JOIN params p
    WHERE dt BETWEEN p.dt_from AND p.dt_to
      AND from_iso8601_timestamp("timestamp") >= p.t_from AND from_iso8601_timestamp("timestamp") < p.t_to
      AND (p.workspace = '' OR workspace_id = p.workspace)
      AND tool <> ''
      AND coalesce(event_type, 'tool_call') = 'tool_call'
),
ranked AS (
    SELECT
        tool,
        outcome,
        duration_ms,
        row_number() OVER (PARTITION BY tool ORDER BY duration_ms) AS duration_rank,
        count(*) OVER (PARTITION BY tool) AS tool_calls
    FROM calls
)
SELECT
    tool,
    count(*) AS calls,
    count_if(outcome = 'denied') AS denied,
    count_if(outcome = 'error') AS failed,
    max(CASE WHEN duration_rank = (95 * tool_calls + 99) / 100 THEN duration_ms END) AS p95_ms,
    max(duration_ms) AS max_ms
FROM ranked
GROUP BY tool
ORDER BY calls DESC, tool
