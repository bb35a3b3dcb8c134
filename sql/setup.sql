-- mssql-cdc: enable change data capture on a database and a table, and a least-privilege
-- reader login for the stream (docs/permissions.md says why each grant is there).
--
-- Run with sqlcmd as a sysadmin (sys.sp_cdc_enable_db needs sysadmin), giving every variable:
--
--   sqlcmd -S HOST -d master -i sql/setup.sql -v DatabaseName=sales SourceSchema=dbo
--          SourceTable=orders GatingRole=cdc_reader_role ReaderLogin=cdc_reader
--          ReaderPassword="<a strong password>"
--
-- SQL Server Agent must run: the capture and cleanup jobs are Agent jobs, made by the first
-- sys.sp_cdc_enable_table of the database. The capture instance is named
-- <SourceSchema>_<SourceTable>; its change table is cdc.[<SourceSchema>_<SourceTable>_CT].
--
-- The parts run in order and each runs once: for another table of the same database run parts
-- 2 and 4 again with its names (part 3 would fail with error 15025, the login exists).
-- Afterwards check it as the reader: mssql-cdc check --server HOST --database sales
--   --user cdc_reader --capture-instance dbo_orders   (password from $MSSQL_CDC_PASSWORD)

-- 1. The database: CDC on (a no-op when it is on already).
USE [$(DatabaseName)];
EXEC sys.sp_cdc_enable_db;
GO

-- 2. The table: a capture instance of every column, with a gating role (created when it does
--    not exist): only its members (and db_owner) may read the change data. Net changes are not
--    needed by mssql-cdc. A table needs a primary key or unique index for split snapshots.
EXEC sys.sp_cdc_enable_table
    @source_schema = N'$(SourceSchema)',
    @source_name = N'$(SourceTable)',
    @role_name = N'$(GatingRole)',
    @supports_net_changes = 0;
GO

-- 3. The reader: a SQL login and its user in the database. No server role, no db_owner.
CREATE LOGIN [$(ReaderLogin)] WITH PASSWORD = N'$(ReaderPassword)';
CREATE USER [$(ReaderLogin)] FOR LOGIN [$(ReaderLogin)];
GO

-- 4. The reader's grants for this table:
--    * SELECT on the source table: the CDC metadata procedures and functions list the capture
--      instance only to a login with SELECT on its captured columns; snapshots read it;
--    * SELECT on the change table: the stream reads its rows (with __$command_id, which only
--      the change table has);
--    * membership in the gating role: without it the CDC metadata procedures leave the
--      instance out;
--    * SELECT on cdc.lsn_time_mapping (commit LSNs and times, no row data): every change read
--      joins it; no Microsoft page says which logins may read it, so it is granted here (a
--      harmless repeat where the database already lets every user read it);
--    * SELECT on cdc.change_tables (capture instance names, object ids, role names; no data):
--      lets `mssql-cdc check` say which grant is missing when the instance is not visible.
--    The grants of cdc.lsn_time_mapping and cdc.change_tables serve every table of the
--    database. Nothing else: sys.fn_cdc_get_max_lsn and the server clock need no grant. For
--    isolationLevel=snapshot a DBA also runs
--      ALTER DATABASE [$(DatabaseName)] SET ALLOW_SNAPSHOT_ISOLATION ON;
GRANT SELECT ON [$(SourceSchema)].[$(SourceTable)] TO [$(ReaderLogin)];
GRANT SELECT ON cdc.[$(SourceSchema)_$(SourceTable)_CT] TO [$(ReaderLogin)];
GRANT SELECT ON cdc.lsn_time_mapping TO [$(ReaderLogin)];
GRANT SELECT ON cdc.change_tables TO [$(ReaderLogin)];
ALTER ROLE [$(GatingRole)] ADD MEMBER [$(ReaderLogin)];
GO

-- 5. What is captured now (capture_instance, start_lsn, role_name, captured_column_list).
EXEC sys.sp_cdc_help_change_data_capture;
GO

-- The cleanup job deletes change rows older than its retention (default 4320 minutes, 3 days).
-- It must be well above how often the stream runs (mssql-cdc check fails below twice the
-- schedule); to keep 7 days:
--   EXEC sys.sp_cdc_change_job @job_type = N'cleanup', @retention = 10080;
