-- Tokens with a spike of denials: at least 10 in the hour that ended 10 minutes ago and more than 3x their hourly average of the 24 hours before.
-- Runs unchanged on Athena (Trino) and on DuckDB (`aacmcp audit query --saved denial_spike_tokens`).
-- audit_log: in Athena, the table of that name in the Glue database the workgroup
-- queries (columns = events/audit/record.schema.json, partitions dt and hour as
-- strings); locally, the DuckDB view over <data>/audit. Delivery is at-least-once,
-- so rows are deduplicated by event_id first. The dt filter prunes partitions.
-- Tool calls only: authorization events (event_type 'authorization') share the
-- table; records of version 1.0 have no event_type (NULL) and are tool calls.
-- Thresholds: 10 denials in the last hour keeps a few fat-fingered calls quiet; 3x the
-- token's own hourly average over the previous 24 hours keeps a token that is always
-- noisy (a misconfigured integration) from alerting every hour. A token with no
-- history alerts at 10.
-- A question put to a person (reason human_confirmation_required with confirmation
-- elicited) is not a denial of the caller: under the elicit and require policies
-- every delete starts with one, so counting them would alert on a busy admin.
-- Records before 1.3 have no confirmation (NULL).
-- The windows end 10 minutes ago, where both engines have the data: Firehose delivers
-- up to 1.5x its 300 s buffer interval (7.5 minutes) late with dynamic partitioning, so
-- Athena has no records of the last minutes yet while the local files do. Ending the
-- windows before that gap gives the same answer on both (queries.DeliveryLag, checked
-- against the stream's buffer interval in infra; docs/deploy.md).
WITH bounds AS (
    SELECT current_timestamp - INTERVAL '10' MINUTE AS window_end
),
denied AS (
    SELECT DISTINCT event_id, token_id, workspace_id, from_iso8601_timestamp("timestamp") AS ts
    FROM audit_log
    WHERE outcome = 'denied' AND token_id <> ''
      AND coalesce(event_type, 'tool_call') = 'tool_call'
      AND NOT (reason = 'human_confirmation_required' AND coalesce(confirmation, '') = 'elicited')
      AND dt >= date_format(current_timestamp - INTERVAL '26' HOUR, '%Y-%m-%d')
),
per_token AS (
    SELECT
        token_id,
        workspace_id,
        count_if(ts >= window_end - INTERVAL '1' HOUR) AS denials_last_hour,
        count_if(ts < window_end - INTERVAL '1' HOUR) AS denials_previous_24h
    FROM denied CROSS JOIN bounds
    WHERE ts >= window_end - INTERVAL '25' HOUR AND ts < window_end
    GROUP BY token_id, workspace_id
)
SELECT
    token_id,
    workspace_id,
    denials_last_hour,
    denials_previous_24h,
    round(CAST(denials_previous_24h AS DOUBLE) / 24, 2) AS avg_hourly_previous_24h
FROM per_token
WHERE denials_last_hour >= 10
  AND CAST(denials_last_hour AS DOUBLE) > 3 * (CAST(denials_previous_24h AS DOUBLE) / 24)
ORDER BY denials_last_hour DESC, token_id
