-- Destructive tool calls of a period by user, OAuth client and confirmation kind ('' none, flag, elicited, or any kind a later version writes), by result.
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
-- confirmation came with event version 1.3: older records have NULL there and count
-- as '' (how they were confirmed was not recorded). The kind is grouped as written,
-- so a kind this query does not name gets its own rows rather than disappearing.
-- Under the elicit and require policies a delete is two calls: the question (asked:
-- outcome denied, reason human_confirmation_required, confirmation elicited) and the
-- retry with the person's answer (succeeded, declined, or refused). refused counts
-- every other denial. Requests turned away for their token (reason invalid_token)
-- are left out: no user or client is known for them.
WITH params AS (
    -- The partition bounds are computed here, once, not beside every row.
    SELECT t_from, t_to, workspace, date_format(t_from, '%Y-%m-%d') AS dt_from, date_format(t_to, '%Y-%m-%d') AS dt_to
    FROM (SELECT from_iso8601_timestamp(?) AS t_from, from_iso8601_timestamp(?) AS t_to, CAST(? AS varchar) AS workspace) AS bound
),
destructive AS (
    SELECT DISTINCT
        event_id,
        user_id,
        coalesce(client_id, '') AS client_id,
        coalesce(confirmation, '') AS confirmation,
        outcome,
        reason,
        reason = 'human_confirmation_required' AND coalesce(confirmation, '') = 'elicited' AS asked
    FROM audit_log CROSS JOIN params p
    WHERE dt BETWEEN p.dt_from AND p.dt_to
      AND from_iso8601_timestamp("timestamp") >= p.t_from AND from_iso8601_timestamp("timestamp") < p.t_to
      AND (p.workspace = '' OR workspace_id = p.workspace)
      AND destructive
      AND coalesce(event_type, 'tool_call') = 'tool_call'
      AND reason <> 'invalid_token'
)
SELECT
    user_id,
    client_id,
    confirmation,
    count(*) AS calls,
    count_if(outcome = 'success') AS succeeded,
    count_if(asked) AS asked,
    count_if(reason = 'confirmation_declined') AS declined,
    count_if(outcome = 'denied' AND NOT asked AND reason <> 'confirmation_declined') AS refused,
    count_if(outcome = 'error') AS failed
FROM destructive
GROUP BY user_id, client_id, confirmation
ORDER BY calls DESC, user_id, client_id, confirmation
