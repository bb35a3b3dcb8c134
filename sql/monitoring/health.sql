-- mssql-cdc: the health of every stream writing to a facts table, one row per stream
-- (docs/monitoring.md#the-health-query). Databricks SQL or Spark SQL.
--
-- Parameter :facts is the facts table's name ('main.ops.ingestion_facts', or a path as
-- 'delta.`/mnt/ops/facts`'). In Spark: spark.sql(text, args={"facts": name}); in a Databricks
-- SQL query or dashboard it is a text parameter. The thresholds below are examples: edit them,
-- and set retention_hours to the cleanup job's retention (mssql-cdc check prints it; SQL
-- Server's default is 72). problems lists what is wrong; unhealthy is 1 when anything is (alert
-- on SUM(unhealthy) > 0).
--
-- headroom_left_hours: the hours before cleanup deletes changes the stream has not read: the
-- retention less the hours since the oldest change it may not have read (the newest change it
-- read, or the row's write time when it was current), as mssql-cdc status --retention-hours
-- computes it. The facts column retention_headroom_hours is the same figure as of the read,
-- measured by the stream from the retention when its login can read it (from the cleanup
-- watermark otherwise: detail says headroom_from cleanup_watermark).
--
-- A stream is all its generations (docs/generations.md): after a re-snapshot the stream writes as
-- <app_id>.g<n>, so rows are grouped by the app_id less that suffix, and the newest row (by
-- written_at: batch ids restart in each generation) speaks for the stream; sink_id says which
-- generation wrote it.
WITH latest AS (
  SELECT
    regexp_replace(app_id, '[.]g[0-9]+$', '') AS stream,
    max_by(struct(*), written_at) AS f
  FROM IDENTIFIER(:facts)
  WHERE event IS NULL AND batch_id IS NOT NULL
  GROUP BY regexp_replace(app_id, '[.]g[0-9]+$', '')
),
figures AS (
  SELECT
    stream AS app_id,
    f.app_id AS sink_id,
    f.target,
    f.batch_id AS last_batch,
    f.rows AS last_rows,
    f.written_at AS last_written_at,
    timestampdiff(MICROSECOND, f.written_at, convert_timezone('UTC', localtimestamp()))
      / 3.6e9 AS hours_since_last,
    f.ingestion_lag_seconds,
    f.capture_lag_seconds,
    f.retention_headroom_hours,
    72.0 -- retention_hours
      - timestampdiff(
        MICROSECOND,
        CASE
          WHEN f.ingestion_lag_seconds <= 0 THEN greatest(f.end_commit_ts, f.written_at)
          ELSE f.end_commit_ts
        END,
        convert_timezone('UTC', localtimestamp())
      ) / 3.6e9 AS headroom_left_hours,
    f.duration_ms AS last_duration_ms
  FROM latest
),
checked AS (
  SELECT
    *,
    filter(
      array(
        CASE WHEN hours_since_last > 0.25 THEN 'no facts row for 15 min' END,
        CASE WHEN headroom_left_hours IS NULL THEN 'metrics missing' END,
        CASE WHEN headroom_left_hours < 24 THEN 'retention headroom under 24 h' END,
        CASE WHEN ingestion_lag_seconds > 3600 THEN 'ingestion lag over 1 h' END,
        CASE WHEN capture_lag_seconds > 600 THEN 'capture lag over 10 min' END
      ),
      p -> p IS NOT NULL
    ) AS problems
  FROM figures
)
SELECT *, CASE WHEN size(problems) > 0 THEN 1 ELSE 0 END AS unhealthy
FROM checked
ORDER BY app_id
