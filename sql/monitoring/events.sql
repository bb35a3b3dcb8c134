-- mssql-cdc: the events someone must know about, newest first (docs/monitoring.md).
--
-- Parameter :facts as in health.sql. resnapshot and data_skipped mean data was re-read or
-- lost (alert on any row of those two); schema_change and capture_instance_switched mean the
-- source table changed; bootstrap is a stream's first snapshot. The last 7 days.
-- stream is the app_id less a generation's .g<n> suffix (a stream is all its generations).
SELECT
  written_at,
  regexp_replace(app_id, '[.]g[0-9]+$', '') AS stream,
  app_id,
  event,
  rows,
  max_lsn AS lsn,
  lost_from_ts,
  lost_to_ts,
  target,
  detail,
  CASE WHEN event IN ('resnapshot', 'data_skipped') THEN 1 ELSE 0 END AS alert
FROM IDENTIFIER(:facts)
WHERE event IN (
    'bootstrap', 'resnapshot', 'schema_change', 'capture_instance_switched', 'data_skipped'
  )
  AND written_at >= convert_timezone('UTC', localtimestamp()) - INTERVAL 7 DAYS
ORDER BY written_at DESC, app_id
