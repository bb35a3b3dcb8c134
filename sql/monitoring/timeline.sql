-- mssql-cdc: every stream's micro-batches over time, for charts (docs/monitoring.md): rows per
-- batch and per second, lags, retention headroom, batch duration, and the share of the read
-- spent waiting on the network (near 1: the read was network-bound).
--
-- Parameter :facts as in health.sql. The last 24 hours. rows_per_second is the batch's rows
-- over the seconds since the stream's previous row (over the batch's duration for the first).
-- stream is the app_id less a generation's .g<n> suffix (a stream is all its generations),
-- so a re-snapshot's generation continues its stream's lines.
SELECT
  regexp_replace(app_id, '[.]g[0-9]+$', '') AS stream,
  app_id,
  batch_id,
  written_at,
  rows,
  rows / coalesce(
    nullif(
      timestampdiff(
        MICROSECOND, lag(written_at) OVER (
          PARTITION BY regexp_replace(app_id, '[.]g[0-9]+$', '') ORDER BY written_at
        ), written_at
      ) / 1e6,
      0
    ),
    nullif(duration_ms, 0) / 1e3
  ) AS rows_per_second,
  ingestion_lag_seconds,
  capture_lag_seconds,
  retention_headroom_hours,
  duration_ms / 1e3 AS duration_seconds,
  read_seconds,
  read_mb,
  network_wait_ms / nullif(read_seconds * 1000, 0) AS network_share
FROM IDENTIFIER(:facts)
WHERE event IS NULL
  AND batch_id IS NOT NULL
  AND written_at >= convert_timezone('UTC', localtimestamp()) - INTERVAL 24 HOURS
ORDER BY stream, written_at
