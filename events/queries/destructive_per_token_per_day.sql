-- Destructive tool calls per token per day (UTC) over the last 30 days, by outcome.
-- Runs unchanged on Athena (Trino) and on DuckDB (`aacmcp audit query --saved destructive_per_token_per_day`).
-- audit_log: in Athena, the table of that name in the Glue database the workgroup
-- queries (columns = events/audit/record.schema.json, partitions dt and hour as
-- strings); locally, the DuckDB view over <data>/audit. Delivery is at-least-once,
-- so rows are deduplicated by event_id first. The dt filter prunes partitions.
-- Tool calls only: authorization events (event_type 'authorization') share the
-- table; records of version 1.0 have no event_type (NULL) and are tool calls.
-- Under the elicit and require policies a delete starts with a question put to the
-- person (outcome denied, reason human_confirmation_required, confirmation elicited):
-- counted as asked, not as denied, since nothing was refused.
WITH destructive AS (
    SELECT DISTINCT event_id, substr("timestamp", 1, 10) AS call_date, workspace_id, token_id, outcome,
        reason = 'human_confirmation_required' AND coalesce(confirmation, '') = 'elicited' AS asked
    FROM audit_log
    WHERE destructive
      AND coalesce(event_type, 'tool_call') = 'tool_call'
      AND dt >= date_format(current_timestamp - INTERVAL '30' DAY, '%Y-%m-%d')
)
SELECT
    call_date,
    workspace_id,
    token_id,
    count(*) AS destructive_calls,
    count_if(outcome = 'success') AS succeeded,
    count_if(outcome = 'denied' AND NOT asked) AS denied,
    count_if(asked) AS asked,
    count_if(outcome = 'error') AS failed
FROM destructive
GROUP BY call_date, workspace_id, token_id
ORDER BY call_date DESC, destructive_calls DESC, workspace_id, token_id
