-- The five most called tools per workspace per day (UTC) over the last 7 days, with denials and errors.
-- Runs unchanged on Athena (Trino) and on DuckDB (`aacmcp audit query --saved top_tools_per_workspace_per_day`).
-- audit_log: in Athena, the table of that name in the Glue database the workgroup
-- queries (columns = events/audit/record.schema.json, partitions dt and hour as
-- strings); locally, the DuckDB view over <data>/audit. Delivery is at-least-once,
-- so rows are deduplicated by event_id first. The dt filter prunes partitions.
-- Tool calls only: authorization events (event_type 'authorization') share the
-- table; records of version 1.0 have no event_type (NULL) and are tool calls.
WITH calls AS (
    SELECT DISTINCT event_id, substr("timestamp", 1, 10) AS call_date, workspace_id, tool, outcome
    FROM audit_log
    WHERE workspace_id <> '' AND tool <> ''
      AND coalesce(event_type, 'tool_call') = 'tool_call'
      AND dt >= date_format(current_timestamp - INTERVAL '7' DAY, '%Y-%m-%d')
),
per_tool AS (
    SELECT
        call_date,
        workspace_id,
        tool,
        count(*) AS calls,
        count_if(outcome = 'denied') AS denied,
        count_if(outcome = 'error') AS failed
    FROM calls
    GROUP BY call_date, workspace_id, tool
),
ranked AS (
    SELECT
        call_date, workspace_id, tool, calls, denied, failed,
        row_number() OVER (PARTITION BY call_date, workspace_id ORDER BY calls DESC, tool) AS tool_rank
    FROM per_tool
)
SELECT call_date, workspace_id, tool_rank, tool, calls, denied, failed
FROM ranked
WHERE tool_rank <= 5
ORDER BY call_date DESC, workspace_id, tool_rank
