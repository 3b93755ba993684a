-- Destructive tool calls per OAuth client per day (UTC) over the last 30 days, by tool, with denials; client_id '' is personal tokens.
-- Runs unchanged on Athena (Trino) and on DuckDB (`aacmcp audit query --saved destructive_calls_by_client`).
-- audit_log: in Athena, the table of that name in the Glue database the workgroup
-- queries (columns = events/audit/record.schema.json, partitions dt and hour as
-- strings); locally, the DuckDB view over <data>/audit. Delivery is at-least-once,
-- so rows are deduplicated by event_id first. The dt filter prunes partitions.
-- Tool calls only: authorization events (event_type 'authorization') share the
-- table; records of version 1.0 have no event_type (NULL) and are tool calls.
-- client_id is the connector the token was issued to (a client id metadata URL or a
-- registered client id). It stays '' for personal (aac_) tokens rather than a label,
-- so a row can be matched against the records (WHERE client_id = ''); 1.0 records,
-- written before OAuth existed, have NULL there and count as personal tokens.
-- Requests turned away for their token (reason invalid_token) are left out: no client
-- is known for them (denied_by_reason_24h counts them).
-- Under the elicit and require policies a delete starts with a question put to the
-- person (outcome denied, reason human_confirmation_required, confirmation elicited):
-- counted as asked, not as denied, since nothing was refused.
WITH destructive AS (
    SELECT DISTINCT event_id, substr("timestamp", 1, 10) AS day, coalesce(client_id, '') AS client_id, tool, outcome,
        reason = 'human_confirmation_required' AND coalesce(confirmation, '') = 'elicited' AS asked
    FROM audit_log
    WHERE destructive
      AND coalesce(event_type, 'tool_call') = 'tool_call'
      AND reason <> 'invalid_token'
      AND dt >= date_format(current_timestamp - INTERVAL '30' DAY, '%Y-%m-%d')
)
SELECT
    day,
    client_id,
    tool,
    count(*) AS calls,
    count_if(outcome = 'denied' AND NOT asked) AS denied,
    count_if(asked) AS asked
FROM destructive
GROUP BY day, client_id, tool
ORDER BY day DESC, calls DESC, client_id, tool
