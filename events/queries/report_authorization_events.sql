-- Authorization server events of a period (consent, tokens issued and refreshed, refresh reuse, revocations, registrations) by action, OAuth client and outcome.
-- Runs unchanged on Athena (Trino) and on DuckDB (`aacmcp audit report`).
-- Parameters, in order (Athena ExecutionParameters, bound the same way locally): the
-- period's start and end as ISO 8601 UTC timestamp literals ('2026-12-01T00:00:00Z'),
-- start included, end excluded; and a workspace id, '' for every workspace.
-- audit_log: in Athena, the table of that name in the Glue database the workgroup
-- queries (columns = events/audit/record.schema.json, partitions dt and hour as
-- strings); locally, the DuckDB view over <data>/audit. Delivery is at-least-once,
-- so rows are deduplicated by event_id first. The dt bounds prune partitions.
-- Authorization events only (event_type 'authorization'); 1.0 records have no
-- event_type (NULL) and are tool calls. 1.0 records have no client_id either. With
-- a workspace given, only the events recorded with that workspace count.
WITH params AS (
    -- The partition bounds are computed here, once, not beside every row.
    SELECT t_from, t_to, workspace, date_format(t_from, '%Y-%m-%d') AS dt_from, date_format(t_to, '%Y-%m-%d') AS dt_to
    FROM (SELECT from_iso8601_timestamp(?) AS t_from, from_iso8601_timestamp(?) AS t_to, CAST(? AS varchar) AS workspace) AS bound
),
events AS (
    SELECT DISTINCT event_id, action, coalesce(client_id, '') AS client_id, outcome
    FROM audit_log CROSS JOIN params p
    WHERE dt BETWEEN p.dt_from AND p.dt_to
      AND from_iso8601_timestamp("timestamp") >= p.t_from AND from_iso8601_timestamp("timestamp") < p.t_to
      AND (p.workspace = '' OR workspace_id = p.workspace)
      AND coalesce(event_type, 'tool_call') = 'authorization'
)
SELECT action, client_id, outcome, count(*) AS events
FROM events
GROUP BY action, client_id, outcome
ORDER BY events DESC, action, client_id, outcome
