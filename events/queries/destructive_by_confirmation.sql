-- Destructive tool calls of the last 30 days by OAuth client, MCP client and confirmation kind: '' none, flag (confirm: true alone, which the model writes), elicited (the client answered the server's form) or approved (a person approved on aacmcp's page).
-- Runs unchanged on Athena (Trino) and on DuckDB (`aacmcp audit query --saved destructive_by_confirmation`).
-- audit_log: in Athena, the table of that name in the Glue database the workgroup
-- queries (columns = events/audit/record.schema.json, partitions dt and hour as
-- strings); locally, the DuckDB view over <data>/audit. Delivery is at-least-once,
-- so rows are deduplicated by event_id first. The dt filter prunes partitions.
-- Tool calls only: authorization events (event_type 'authorization') share the
-- table; records of version 1.0 have no event_type (NULL) and are tool calls.
-- confirmation came with event version 1.3: older records have NULL there and count
-- as '' (how they were confirmed was not recorded). A call refused before or at its
-- confirm check (destructive_flag_missing) is ''.
-- client_id is the connector the token was issued to ('' for personal tokens and in
-- 1.0 records); client_name is what the MCP client calls itself (clientInfo.name,
-- the caller's own text), which tells apart the software behind personal tokens.
-- Under the elicit and require policies a delete is two calls: the question
-- (asked: outcome denied, reason human_confirmation_required, confirmation
-- elicited) and the retry with the person's answer (succeeded, declined, or
-- refused as confirmation_invalid). Under approve it is the same two: the answer
-- carrying the approval link (asked: reason human_approval_required, confirmation
-- approved) and the call that spends the person's decision (succeeded, declined
-- when they denied, or confirmation_invalid for a replay). refused counts every
-- other denial, including human_confirmation_required for a client that cannot
-- ask (confirmation flag).
-- Requests turned away for their token (reason invalid_token) are left out: no client
-- is known for them.
WITH destructive AS (
    SELECT DISTINCT
        event_id,
        coalesce(client_id, '') AS client_id,
        client_name,
        coalesce(confirmation, '') AS confirmation,
        outcome,
        reason
    FROM audit_log
    WHERE destructive
      AND coalesce(event_type, 'tool_call') = 'tool_call'
      AND reason <> 'invalid_token'
      AND dt >= date_format(current_timestamp - INTERVAL '30' DAY, '%Y-%m-%d')
),
classified AS (
    SELECT
        client_id,
        client_name,
        confirmation,
        outcome,
        reason,
        (confirmation = 'elicited' AND reason = 'human_confirmation_required')
            OR (confirmation = 'approved' AND reason = 'human_approval_required') AS asked
    FROM destructive
)
SELECT
    client_id,
    client_name,
    confirmation,
    count(*) AS calls,
    count_if(outcome = 'success') AS succeeded,
    count_if(asked) AS asked,
    count_if(reason = 'confirmation_declined') AS declined,
    count_if(outcome = 'denied' AND NOT asked AND reason <> 'confirmation_declined') AS refused,
    count_if(outcome = 'error') AS failed
FROM classified
GROUP BY client_id, client_name, confirmation
ORDER BY client_id, client_name, confirmation
