-- Switch a CDC-tracked table to a new capture instance (for example to capture an added
-- column) while mssql-cdc streams keep running. See docs/schema-changes.md.
--
-- Replace the placeholders: dbo / orders (the table), dbo_orders (the current instance),
-- dbo_orders_v2 (the new one), [stream_reader] (each login that streams the table).
-- Steps 1-4 run now; step 5 only once the readiness query (step 4b) returns no row.
-- References: sys.sp_cdc_enable_table, sys.sp_cdc_disable_table,
-- sys.sp_cdc_help_change_data_capture, sys.fn_cdc_get_min_lsn (Microsoft docs).

-- 1. The table change itself (streams go on; existing instances do not capture the column).
-- ALTER TABLE dbo.orders ADD note nvarchar(20) NULL;

-- 2. A second capture instance with the new column list (NULL: every column of the table;
--    a table has at most two capture instances).
EXEC sys.sp_cdc_enable_table
    @source_schema = N'dbo',
    @source_name = N'orders',
    @role_name = NULL,
    @capture_instance = N'dbo_orders_v2',
    @captured_column_list = NULL;

-- 3. Let every streaming login read the new change table (else its stream fails with a
--    PermissionError naming it).
GRANT SELECT ON cdc.[dbo_orders_v2_CT] TO [stream_reader];

-- 4. Both instances listed, and the new one has a start: min_lsn leaves 0x00... once the capture
--    job processed the new instance (up to its polling interval, about 5 minutes when quiet).
EXEC sys.sp_cdc_help_change_data_capture @source_schema = N'dbo', @source_name = N'orders';
SELECT sys.fn_cdc_get_min_lsn(N'dbo_orders_v2') AS new_instance_start;

-- 4b. Readiness, in Spark SQL on each facts table the streams write (not on SQL Server): the
--     app_ids listed here may still read the old instance. A stream is done with it once it
--     has a capture_instance_switched row and a later micro-batch row. A stream that started
--     after the new instance's start never read the old one: check that it is not listed
--     because of that alone (it has micro-batch rows and no switch row).
--
--   SELECT app_id
--   FROM <facts_table>
--   GROUP BY app_id
--   HAVING max(CASE WHEN event = 'capture_instance_switched' THEN batch_id END) IS NULL
--       OR max(CASE WHEN event IS NULL THEN batch_id END)
--          <= max(CASE WHEN event = 'capture_instance_switched' THEN batch_id END);

-- 5. Only when 4b is clear: disable the old instance. Streams whose captureInstance is the
--    default name (dbo_orders) follow the newest instance; a stream with a custom name fails
--    with a ValueError saying to set captureInstance to the new name (then restart it).
-- EXEC sys.sp_cdc_disable_table
--     @source_schema = N'dbo',
--     @source_name = N'orders',
--     @capture_instance = N'dbo_orders';
