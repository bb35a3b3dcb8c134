-- mssql-cdc: the warnings the reader recorded on micro-batch rows, one row per stream and
-- warning, with when it was first and last recorded (docs/monitoring.md). A warning is recorded
-- once per run, so a count above 1 means it came back after restarts.
--
-- Parameter :facts as in health.sql. The last 7 days.
-- app_id is the stream's (a generation's .g<n> suffix dropped: a stream is all its
-- generations).
SELECT
  regexp_replace(app_id, '[.]g[0-9]+$', '') AS app_id,
  warning,
  count(*) AS recorded,
  min(written_at) AS first_at,
  max(written_at) AS last_at
FROM (
  SELECT app_id, written_at, explode(from_json(detail, 'warnings ARRAY<STRING>').warnings) AS warning
  FROM IDENTIFIER(:facts)
  WHERE event IS NULL
    AND detail IS NOT NULL
    AND written_at >= convert_timezone('UTC', localtimestamp()) - INTERVAL 7 DAYS
)
GROUP BY regexp_replace(app_id, '[.]g[0-9]+$', ''), warning
ORDER BY last_at DESC, app_id, warning
