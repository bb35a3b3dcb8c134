"""Every system procedure, function and view the product or the client suite uses answers
with the columns, order and SQL types of its current Microsoft reference page.

The expected shapes below are transcribed by hand from the pages named in each entry (not
generated from the emulator); ``sysname`` is written as what it is, ``nvarchar(128)``. The
emulator's answer is read from its COLMETADATA through python-tds (:mod:`sqltypes`). A view
the emulator has only some columns of (``partial``) is checked on the columns it has, named
in the page's order; ``SELECT *`` from it is refused (test_emulator_catalog.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

import sqltypes

pytest.importorskip("pytds")
pytest.importorskip("duckdb")

from mssql_cdc.emulator import Emulator

SYSNAME = "nvarchar(128)"
LSN = "binary(10)"


@dataclass(frozen=True)
class Shape:
    page: str
    sql: str
    #: the result sets, each a list of (column, type)
    results: list[list[tuple[str, str]]]


# the captured columns of dbo.t, as the source table declares them
CAPTURED = [
    ("id", "int"),
    ("name", "nvarchar(40)"),
    ("price", "decimal(10,2)"),
    ("seen", "datetime2(3)"),
]

SHAPES = [
    Shape(
        "sys.sp_cdc_help_change_data_capture (Transact-SQL)",
        "EXEC sys.sp_cdc_help_change_data_capture",
        [
            [
                ("source_schema", SYSNAME),
                ("source_table", SYSNAME),
                ("capture_instance", SYSNAME),
                ("object_id", "int"),
                ("source_object_id", "int"),
                ("start_lsn", LSN),
                ("end_lsn", LSN),
                ("supports_net_changes", "bit"),
                ("has_drop_pending", "bit"),
                ("role_name", SYSNAME),
                ("index_name", SYSNAME),
                ("filegroup_name", SYSNAME),
                ("create_date", "datetime"),
                ("index_column_list", "nvarchar(max)"),
                ("captured_column_list", "nvarchar(max)"),
            ]
        ],
    ),
    Shape(
        "sys.sp_cdc_get_captured_columns (Transact-SQL)",
        "EXEC sys.sp_cdc_get_captured_columns @capture_instance = N'dbo_t'",
        [
            [
                ("source_schema", SYSNAME),
                ("source_table", SYSNAME),
                ("capture_instance", SYSNAME),
                ("column_name", SYSNAME),
                ("column_id", "int"),
                ("column_ordinal", "int"),
                ("data_type", SYSNAME),
                ("character_maximum_length", "int"),
                ("numeric_precision", "tinyint"),
                ("numeric_precision_radix", "smallint"),
                ("numeric_scale", "int"),
                ("datetime_precision", "smallint"),
            ]
        ],
    ),
    Shape(
        "sys.sp_cdc_get_ddl_history (Transact-SQL)",
        "EXEC sys.sp_cdc_get_ddl_history @capture_instance = N'dbo_t'",
        [
            [
                ("source_schema", SYSNAME),
                ("source_table", SYSNAME),
                ("capture_instance", SYSNAME),
                ("required_column_update", "bit"),
                ("ddl_command", "nvarchar(max)"),
                ("ddl_lsn", LSN),
                ("ddl_time", "datetime"),
            ]
        ],
    ),
    Shape(
        "sys.sp_cdc_help_jobs (Transact-SQL)",
        "EXEC sys.sp_cdc_help_jobs",
        [
            [
                ("job_id", "uniqueidentifier"),
                ("job_type", "nvarchar(20)"),
                ("job_name", SYSNAME),
                ("maxtrans", "int"),
                ("maxscans", "int"),
                ("continuous", "bit"),
                ("pollinginterval", "bigint"),
                ("retention", "bigint"),
                ("threshold", "bigint"),
            ]
        ],
    ),
    Shape(
        "cdc.change_tables (Transact-SQL)",
        "SELECT * FROM cdc.change_tables",
        [
            [
                ("object_id", "int"),
                ("version", "int"),
                ("source_object_id", "int"),
                ("capture_instance", SYSNAME),
                ("start_lsn", LSN),
                ("end_lsn", LSN),
                ("supports_net_changes", "bit"),
                ("has_drop_pending", "bit"),
                ("role_name", SYSNAME),
                ("index_name", SYSNAME),
                ("filegroup_name", SYSNAME),
                ("create_date", "datetime"),
                ("partition_switch", "bit"),
            ]
        ],
    ),
    Shape(
        "cdc.captured_columns (Transact-SQL)",
        "SELECT * FROM cdc.captured_columns",
        [
            [
                ("object_id", "int"),
                ("column_name", SYSNAME),
                ("column_id", "int"),
                ("column_type", SYSNAME),
                ("column_ordinal", "int"),
                ("is_computed", "bit"),
            ]
        ],
    ),
    Shape(
        "cdc.index_columns (Transact-SQL)",
        "SELECT * FROM cdc.index_columns",
        [
            [
                ("object_id", "int"),
                ("column_name", SYSNAME),
                ("index_ordinal", "tinyint"),
                ("column_id", "int"),
            ]
        ],
    ),
    Shape(
        "cdc.lsn_time_mapping (Transact-SQL)",
        "SELECT * FROM cdc.lsn_time_mapping",
        [
            [
                ("start_lsn", LSN),
                ("tran_begin_time", "datetime"),
                ("tran_end_time", "datetime"),
                ("tran_id", "varbinary(10)"),
            ]
        ],
    ),
    Shape(
        "cdc.ddl_history (Transact-SQL)",
        "SELECT * FROM cdc.ddl_history",
        [
            [
                ("source_object_id", "int"),
                ("object_id", "int"),
                ("required_column_update", "bit"),
                ("ddl_command", "nvarchar(max)"),
                ("ddl_lsn", LSN),
                ("ddl_time", "datetime"),
            ]
        ],
    ),
    Shape(
        "cdc.<capture_instance>_CT (Transact-SQL)",
        "SELECT * FROM cdc.dbo_t_CT",
        [
            [
                ("__$start_lsn", LSN),
                ("__$end_lsn", LSN),
                ("__$seqval", LSN),
                ("__$operation", "int"),
                ("__$update_mask", "varbinary(128)"),
                *CAPTURED,
                ("__$command_id", "int"),
            ]
        ],
    ),
    Shape(
        "cdc.fn_cdc_get_all_changes_<capture_instance> (Transact-SQL)",
        "DECLARE @f binary(10) = sys.fn_cdc_get_min_lsn('dbo_t'), "
        "@t binary(10) = sys.fn_cdc_get_max_lsn(); "
        "SELECT * FROM cdc.fn_cdc_get_all_changes_dbo_t(@f, @t, N'all update old')",
        [
            [
                ("__$start_lsn", LSN),
                ("__$seqval", LSN),
                ("__$operation", "int"),
                ("__$update_mask", "varbinary(128)"),
                *CAPTURED,
            ]
        ],
    ),
    Shape(
        "cdc.fn_cdc_get_net_changes_<capture_instance> (Transact-SQL)",
        "DECLARE @f binary(10) = sys.fn_cdc_get_min_lsn('dbo_t'), "
        "@t binary(10) = sys.fn_cdc_get_max_lsn(); "
        "SELECT * FROM cdc.fn_cdc_get_net_changes_dbo_t(@f, @t, N'all with mask')",
        [
            [
                ("__$start_lsn", LSN),
                ("__$operation", "int"),
                ("__$update_mask", "varbinary(128)"),
                *CAPTURED,
            ]
        ],
    ),
    Shape(
        "sys.fn_cdc_get_min_lsn, fn_cdc_get_max_lsn, fn_cdc_increment_lsn, "
        "fn_cdc_decrement_lsn, fn_cdc_map_lsn_to_time, fn_cdc_map_time_to_lsn, "
        "fn_cdc_get_column_ordinal (Transact-SQL): Return types",
        "SELECT sys.fn_cdc_get_min_lsn('dbo_t') AS min_lsn, sys.fn_cdc_get_max_lsn() AS max_lsn, "
        "sys.fn_cdc_increment_lsn(sys.fn_cdc_get_max_lsn()) AS inc, "
        "sys.fn_cdc_decrement_lsn(sys.fn_cdc_get_max_lsn()) AS dec, "
        "sys.fn_cdc_map_lsn_to_time(sys.fn_cdc_get_max_lsn()) AS at, "
        "sys.fn_cdc_map_time_to_lsn('largest less than or equal', GETDATE()) AS lsn, "
        "sys.fn_cdc_get_column_ordinal('dbo_t', 'name') AS ordinal",
        [
            [
                ("min_lsn", LSN),
                ("max_lsn", LSN),
                ("inc", LSN),
                ("dec", LSN),
                ("at", "datetime"),
                ("lsn", LSN),
                ("ordinal", "int"),
            ]
        ],
    ),
    Shape(
        "sys.dm_cdc_log_scan_sessions (Transact-SQL) [partial]",
        "SELECT session_id, start_time, end_time, duration, scan_phase, error_count, tran_count, "
        "last_commit_time, latency, empty_scan_count FROM sys.dm_cdc_log_scan_sessions",
        [
            [
                ("session_id", "int"),
                ("start_time", "datetime"),
                ("end_time", "datetime"),
                ("duration", "bigint"),
                ("scan_phase", "nvarchar(200)"),
                ("error_count", "int"),
                ("tran_count", "bigint"),
                ("last_commit_time", "datetime"),
                ("latency", "int"),
                ("empty_scan_count", "int"),
            ]
        ],
    ),
    Shape(
        "sys.databases (Transact-SQL) [partial]",
        "SELECT name, database_id, snapshot_isolation_state, snapshot_isolation_state_desc, "
        "is_cdc_enabled FROM sys.databases",
        [
            [
                ("name", SYSNAME),
                ("database_id", "int"),
                ("snapshot_isolation_state", "tinyint"),
                ("snapshot_isolation_state_desc", "nvarchar(60)"),
                ("is_cdc_enabled", "bit"),
            ]
        ],
    ),
    Shape(
        "sys.columns (Transact-SQL), SQL Server 2022",
        "SELECT * FROM sys.columns",
        [
            [
                ("object_id", "int"),
                ("name", SYSNAME),
                ("column_id", "int"),
                ("system_type_id", "tinyint"),
                ("user_type_id", "int"),
                ("max_length", "smallint"),
                ("precision", "tinyint"),
                ("scale", "tinyint"),
                ("collation_name", SYSNAME),
                ("is_nullable", "bit"),
                ("is_ansi_padded", "bit"),
                ("is_rowguidcol", "bit"),
                ("is_identity", "bit"),
                ("is_computed", "bit"),
                ("is_filestream", "bit"),
                ("is_replicated", "bit"),
                ("is_non_sql_subscribed", "bit"),
                ("is_merge_published", "bit"),
                ("is_dts_replicated", "bit"),
                ("is_xml_document", "bit"),
                ("xml_collection_id", "int"),
                ("default_object_id", "int"),
                ("rule_object_id", "int"),
                ("is_sparse", "bit"),
                ("is_column_set", "bit"),
                ("generated_always_type", "tinyint"),
                ("generated_always_type_desc", "nvarchar(60)"),
                ("encryption_type", "int"),
                ("encryption_type_desc", "nvarchar(64)"),
                ("encryption_algorithm_name", SYSNAME),
                ("column_encryption_key_id", "int"),
                ("column_encryption_key_database_name", SYSNAME),
                ("is_hidden", "bit"),
                ("is_masked", "bit"),
                ("graph_type", "int"),
                ("graph_type_desc", "nvarchar(60)"),
                ("is_data_deletion_filter_column", "bit"),
                ("ledger_view_column_type", "int"),
                ("ledger_view_column_type_desc", "nvarchar(60)"),
                ("is_dropped_ledger_column", "bit"),
            ]
        ],
    ),
    Shape(
        "sys.objects (Transact-SQL)",
        "SELECT * FROM sys.objects",
        [
            [
                ("name", SYSNAME),
                ("object_id", "int"),
                ("principal_id", "int"),
                ("schema_id", "int"),
                ("parent_object_id", "int"),
                ("type", "char(2)"),
                ("type_desc", "nvarchar(60)"),
                ("create_date", "datetime"),
                ("modify_date", "datetime"),
                ("is_ms_shipped", "bit"),
                ("is_published", "bit"),
                ("is_schema_published", "bit"),
            ]
        ],
    ),
    Shape(
        "sys.tables (Transact-SQL) [partial: the sys.objects columns and is_tracked_by_cdc]",
        "SELECT name, object_id, principal_id, schema_id, parent_object_id, type, type_desc, "
        "create_date, modify_date, is_ms_shipped, is_published, is_schema_published, "
        "is_tracked_by_cdc FROM sys.tables",
        [
            [
                ("name", SYSNAME),
                ("object_id", "int"),
                ("principal_id", "int"),
                ("schema_id", "int"),
                ("parent_object_id", "int"),
                ("type", "char(2)"),
                ("type_desc", "nvarchar(60)"),
                ("create_date", "datetime"),
                ("modify_date", "datetime"),
                ("is_ms_shipped", "bit"),
                ("is_published", "bit"),
                ("is_schema_published", "bit"),
                ("is_tracked_by_cdc", "bit"),
            ]
        ],
    ),
    Shape(
        "sys.types (Transact-SQL)",
        "SELECT * FROM sys.types",
        [
            [
                ("name", SYSNAME),
                ("system_type_id", "tinyint"),
                ("user_type_id", "int"),
                ("schema_id", "int"),
                ("principal_id", "int"),
                ("max_length", "smallint"),
                ("precision", "tinyint"),
                ("scale", "tinyint"),
                ("collation_name", SYSNAME),
                ("is_nullable", "bit"),
                ("is_user_defined", "bit"),
                ("is_assembly_type", "bit"),
                ("default_object_id", "int"),
                ("rule_object_id", "int"),
                ("is_table_type", "bit"),
            ]
        ],
    ),
    Shape(
        "TABLES (Transact-SQL) (INFORMATION_SCHEMA)",
        "SELECT * FROM INFORMATION_SCHEMA.TABLES",
        [
            [
                ("TABLE_CATALOG", "nvarchar(128)"),
                ("TABLE_SCHEMA", "nvarchar(128)"),
                ("TABLE_NAME", SYSNAME),
                ("TABLE_TYPE", "varchar(10)"),
            ]
        ],
    ),
    Shape(
        "COLUMNS (Transact-SQL) (INFORMATION_SCHEMA)",
        "SELECT * FROM INFORMATION_SCHEMA.COLUMNS",
        [
            [
                ("TABLE_CATALOG", "nvarchar(128)"),
                ("TABLE_SCHEMA", "nvarchar(128)"),
                ("TABLE_NAME", "nvarchar(128)"),
                ("COLUMN_NAME", "nvarchar(128)"),
                ("ORDINAL_POSITION", "int"),
                ("COLUMN_DEFAULT", "nvarchar(4000)"),
                ("IS_NULLABLE", "varchar(3)"),
                ("DATA_TYPE", "nvarchar(128)"),
                ("CHARACTER_MAXIMUM_LENGTH", "int"),
                ("CHARACTER_OCTET_LENGTH", "int"),
                ("NUMERIC_PRECISION", "tinyint"),
                ("NUMERIC_PRECISION_RADIX", "smallint"),
                ("NUMERIC_SCALE", "int"),
                ("DATETIME_PRECISION", "smallint"),
                ("CHARACTER_SET_CATALOG", "nvarchar(128)"),
                ("CHARACTER_SET_SCHEMA", "nvarchar(128)"),
                ("CHARACTER_SET_NAME", "nvarchar(128)"),
                ("COLLATION_CATALOG", "nvarchar(128)"),
                ("COLLATION_SCHEMA", "nvarchar(128)"),
                ("COLLATION_NAME", "nvarchar(128)"),
                ("DOMAIN_CATALOG", "nvarchar(128)"),
                ("DOMAIN_SCHEMA", "nvarchar(128)"),
                ("DOMAIN_NAME", "nvarchar(128)"),
            ]
        ],
    ),
    Shape(
        "sp_spaceused (Transact-SQL): @objname specified",
        "EXEC sp_spaceused N'dbo.t'",
        [
            [
                ("name", "nvarchar(128)"),
                ("rows", "char(20)"),
                ("reserved", "varchar(18)"),
                ("data", "varchar(18)"),
                ("index_size", "varchar(18)"),
                ("unused", "varchar(18)"),
            ]
        ],
    ),
    Shape(
        "sp_spaceused (Transact-SQL): @objname omitted, @oneresultset 0",
        "EXEC sp_spaceused",
        [
            [
                ("database_name", "nvarchar(128)"),
                ("database_size", "varchar(18)"),
                ("unallocated space", "varchar(18)"),
            ],
            [
                ("reserved", "varchar(18)"),
                ("data", "varchar(18)"),
                ("index_size", "varchar(18)"),
                ("unused", "varchar(18)"),
            ],
        ],
    ),
    Shape(
        "sp_spaceused (Transact-SQL): @objname omitted, @oneresultset 1",
        "EXEC sp_spaceused @oneresultset = 1",
        [
            [
                ("database_name", "nvarchar(128)"),
                ("database_size", "varchar(18)"),
                ("unallocated space", "varchar(18)"),
                ("reserved", "varchar(18)"),
                ("data", "varchar(18)"),
                ("index_size", "varchar(18)"),
                ("unused", "varchar(18)"),
            ]
        ],
    ),
    Shape(
        "sys.dm_exec_session_wait_stats (Transact-SQL)",
        "SELECT * FROM sys.dm_exec_session_wait_stats",
        [
            [
                ("session_id", "smallint"),
                ("wait_type", "nvarchar(60)"),
                ("waiting_tasks_count", "bigint"),
                ("wait_time_ms", "bigint"),
                ("max_wait_time_ms", "bigint"),
                ("signal_wait_time_ms", "bigint"),
            ]
        ],
    ),
    Shape(
        "sp_help_job (Transact-SQL): the job result set",
        "EXEC msdb.dbo.sp_help_job @job_name = N'cdc.master_capture', @job_aspect = N'JOB'",
        [
            [
                ("job_id", "uniqueidentifier"),
                ("originating_server", "nvarchar(30)"),
                ("name", SYSNAME),
                ("enabled", "tinyint"),
                ("description", "nvarchar(512)"),
                ("start_step_id", "int"),
                ("category", SYSNAME),
                ("owner", SYSNAME),
                ("notify_level_eventlog", "int"),
                ("notify_level_email", "int"),
                ("notify_level_netsend", "int"),
                ("notify_level_page", "int"),
                ("notify_email_operator", SYSNAME),
                ("notify_netsend_operator", SYSNAME),
                ("notify_page_operator", SYSNAME),
                ("delete_level", "int"),
                ("date_created", "datetime"),
                ("date_modified", "datetime"),
                ("version_number", "int"),
                ("last_run_date", "int"),
                ("last_run_time", "int"),
                ("last_run_outcome", "int"),
                ("next_run_date", "int"),
                ("next_run_time", "int"),
                ("next_run_schedule_id", "int"),
                ("current_execution_status", "int"),
                ("current_execution_step", SYSNAME),
                ("current_retry_attempt", "int"),
                ("has_step", "int"),
                ("has_schedule", "int"),
                ("has_target", "int"),
                ("type", "int"),
            ]
        ],
    ),
    Shape(
        "SERVERPROPERTY (Transact-SQL): Return types sql_variant",
        "SELECT SERVERPROPERTY('ProductVersion') AS v, SERVERPROPERTY('EngineEdition') AS e",
        [[("v", "sql_variant"), ("e", "sql_variant")]],
    ),
    Shape(
        "CURRENT_TIMEZONE_ID, SYSDATETIME, SYSUTCDATETIME, SYSDATETIMEOFFSET, GETDATE, DB_NAME, "
        "IS_ROLEMEMBER, OBJECT_NAME, OBJECT_ID, HAS_PERMS_BY_NAME (Transact-SQL): Return types",
        "SELECT CURRENT_TIMEZONE_ID() AS tz, SYSDATETIME() AS local, SYSUTCDATETIME() AS utc, "
        "SYSDATETIMEOFFSET() AS dto, GETDATE() AS now, DB_NAME() AS db, "
        "IS_ROLEMEMBER('db_owner') AS member, OBJECT_NAME(OBJECT_ID('dbo.t')) AS obj, "
        "OBJECT_ID('dbo.t') AS id, HAS_PERMS_BY_NAME('dbo.t', 'OBJECT', 'SELECT') AS perms",
        [
            [
                ("tz", "varchar(128)"),
                ("local", "datetime2(7)"),
                ("utc", "datetime2(7)"),
                ("dto", "datetimeoffset(7)"),
                ("now", "datetime"),
                ("db", "nvarchar(128)"),
                ("member", "int"),
                ("obj", SYSNAME),
                ("id", "int"),
                ("perms", "int"),
            ]
        ],
    ),
]


@pytest.fixture(scope="module")
def server():
    """One emulator for the module: a captured table with changes scanned, a DDL change."""

    class Target:
        pass

    with Emulator() as emu:
        target = Target()
        target.host, target.port, target.user = emu.host, emu.port, "sa"
        target.password, target.database = emu.password, "master"
        with sqltypes.connect(target) as conn, conn.cursor() as cur:
            cur.execute(
                "CREATE TABLE dbo.t (id INT NOT NULL PRIMARY KEY, name NVARCHAR(40), "
                "price DECIMAL(10, 2), seen DATETIME2(3))"
            )
            cur.execute("EXEC sys.sp_cdc_enable_db")
            cur.execute(
                "EXEC sys.sp_cdc_enable_table @source_schema = N'dbo', @source_name = N't', "
                "@role_name = NULL, @supports_net_changes = 1"
            )
            cur.execute("INSERT INTO dbo.t VALUES (1, N'a', 1.50, '2024-01-02 03:04:05.678')")
            cur.execute("UPDATE dbo.t SET name = N'b' WHERE id = 1")
            cur.execute("ALTER TABLE dbo.t ADD extra INT NULL")
            emu.scan()
        yield target


@pytest.mark.parametrize("shape", SHAPES, ids=[s.page for s in SHAPES])
def test_the_documented_shape(server, shape):
    with sqltypes.connect(server) as conn, conn.cursor() as cur:
        got = sqltypes.columns(cur, shape.sql)
    assert [[(c.name, c.type) for c in result] for result in got] == shape.results, shape.page
