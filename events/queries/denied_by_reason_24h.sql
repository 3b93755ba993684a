-- Denied tool calls in the last 24 hours by reason, with how many tokens and workspaces they came from.
-- Runs unchanged on Athena (Trino) and on DuckDB (`aacmcp audit query --saved denied_by_reason_24h`).
-- audit_log: in Athena, the table of that name in the Glue database the workgroup
-- queries (columns = events/audit/record.schema.json, partitions dt and hour as
-- strings); locally, the DuckDB view over <data>/audit. Delivery is at-least-once,
-- so rows are deduplicated by event_id first. The dt filter prunes partitions.
-- Tool calls only: authorization events (event_type 'authorization') share the
-- table; records of version 1.0 have no event_type (NULL) and are tool calls.
-- A question put to a person (reason human_confirmation_required with confirmation
-- elicited: the first half of every delete under the elicit and require policies)
-- refuses nothing and is left out; human_confirmation_required for a client that
-- cannot ask (confirmation flag) is a refusal and counts. Records before 1.3 have
-- no confirmation (NULL).
WITH denied AS (
    SELECT DISTINCT event_id, reason, token_id, workspace_id
    FROM audit_log
    WHERE outcome = 'denied'
      AND coalesce(event_type, 'tool_call') = 'tool_call'
      AND NOT (reason = 'human_confirmation_required' AND coalesce(confirmation, '') = 'elicited')
      AND dt >= date_format(current_timestamp - INTERVAL '1' DAY, '%Y-%m-%d')
      AND from_iso8601_timestamp("timestamp") >= current_timestamp - INTERVAL '1' DAY
)
SELECT
    reason,
    count(*) AS denied_calls,
    count(DISTINCT NULLIF(token_id, '')) AS tokens,
    count(DISTINCT NULLIF(workspace_id, '')) AS workspaces
FROM denied
GROUP BY reason
ORDER BY denied_calls DESC, reason
