-- mssql-cdc: the heartbeat, so that a quiet database's max LSN keeps moving (docs/streaming.md).
--
-- sys.fn_cdc_get_max_lsn() is the newest row of cdc.lsn_time_mapping, which the capture job
-- writes only for transactions it captures (and, on an idle database, about every five minutes).
-- A stream's ingestion lag and its commit-time watermarks therefore stand still on a quiet
-- database. A captured table updated every 10 seconds by a SQL Server Agent job gives the log a
-- captured commit at least that often; writes to tables without CDC, or CHECKPOINT, do not.
--
-- Optional. Run with sqlcmd as a db_owner of the database who may create Agent jobs (sysadmin,
-- or SQLAgentOperatorRole in msdb), after CDC is enabled on the database (sql/setup.sql part 1):
--
--   sqlcmd -S HOST -d master -i sql/heartbeat.sql -v DatabaseName=sales
--
-- The stream reads its own capture instance only; the heartbeat's instance (dbo_cdc_heartbeat)
-- needs no grant. To remove it:
--   EXEC msdb.dbo.sp_delete_job @job_name = N'cdc_heartbeat_<database>';
--   EXEC sys.sp_cdc_disable_table @source_schema = N'dbo', @source_name = N'cdc_heartbeat',
--        @capture_instance = N'dbo_cdc_heartbeat';
--   DROP TABLE dbo.cdc_heartbeat;

-- 1. The table: one row.
USE [$(DatabaseName)];
CREATE TABLE dbo.cdc_heartbeat (
    id TINYINT NOT NULL PRIMARY KEY,
    beat_at DATETIME2(3) NOT NULL
);
INSERT INTO dbo.cdc_heartbeat (id, beat_at) VALUES (1, SYSUTCDATETIME());
GO

-- 2. Captured, without a gating role and without net changes.
EXEC sys.sp_cdc_enable_table
    @source_schema = N'dbo',
    @source_name = N'cdc_heartbeat',
    @role_name = NULL,
    @supports_net_changes = 0;
GO

-- 3. The Agent job: the UPDATE every 10 seconds (a schedule's shortest interval in seconds).
USE msdb;
EXEC dbo.sp_add_job @job_name = N'cdc_heartbeat_$(DatabaseName)',
    @description = N'mssql-cdc heartbeat: keeps sys.fn_cdc_get_max_lsn() moving';
EXEC dbo.sp_add_jobstep @job_name = N'cdc_heartbeat_$(DatabaseName)',
    @step_name = N'beat',
    @subsystem = N'TSQL',
    @database_name = N'$(DatabaseName)',
    @command = N'UPDATE dbo.cdc_heartbeat SET beat_at = SYSUTCDATETIME() WHERE id = 1;';
EXEC dbo.sp_add_jobschedule @job_name = N'cdc_heartbeat_$(DatabaseName)',
    @name = N'every 10 seconds',
    @freq_type = 4,             -- daily
    @freq_interval = 1,         -- every day
    @freq_subday_type = 2,      -- in units of seconds
    @freq_subday_interval = 10; -- every 10 seconds
EXEC dbo.sp_add_jobserver @job_name = N'cdc_heartbeat_$(DatabaseName)', @server_name = N'(local)';
GO
