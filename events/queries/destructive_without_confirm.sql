-- Destructive tool calls without confirm: true in the last 7 days; any outcome but denied is a bug to investigate.
-- Runs unchanged on Athena (Trino) and on DuckDB (`aacmcp audit query --saved destructive_without_confirm`).
-- audit_log: in Athena, the table of that name in the Glue database the workgroup
-- queries (columns = events/audit/record.schema.json, partitions dt and hour as
-- strings); locally, the DuckDB view over <data>/audit. Delivery is at-least-once,
-- so rows are deduplicated by event_id first. The dt filter prunes partitions.
-- Tool calls only: authorization events (event_type 'authorization') share the
-- table; records of version 1.0 have no event_type (NULL) and are tool calls.
SELECT DISTINCT
    "timestamp",
    event_id,
    workspace_id,
    user_id,
    token_id,
    tool,
    resource_id,
    outcome,
    reason,
    client_name,
    source_ip
FROM audit_log
WHERE destructive
  AND NOT confirm_present
  AND coalesce(event_type, 'tool_call') = 'tool_call'
  AND dt >= date_format(current_timestamp - INTERVAL '7' DAY, '%Y-%m-%d')
ORDER BY "timestamp" DESC, event_id
