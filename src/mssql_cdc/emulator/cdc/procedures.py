"""More CDC procedures: help, DDL history, cleanup, the jobs, and role membership.

Result columns follow each procedure's Microsoft reference page
("sys.sp_cdc_help_change_data_capture", "sys.sp_cdc_get_ddl_history",
"sys.sp_cdc_cleanup_change_table", "sys.sp_cdc_change_job", "sys.sp_cdc_help_jobs").
The jobs exist once a table was enabled ("sys.sp_cdc_enable_table": the first table enabled
creates the capture and cleanup jobs); ``sys.sp_cdc_help_jobs`` needs ``db_owner``.
``msdb.dbo.sp_help_job @job_name = ..., @job_aspect = N'JOB'`` ("sp_help_job", Microsoft docs)
answers its job result set, all 32 columns (``current_execution_status``: 1 executing for a
running capture job, 4 idle otherwise) for ``sa`` and ``db_owner`` only (SQL Server: sysadmin
or a SQL Server Agent role in msdb); others get error 229.
``sp_cdc_change_job`` changes take effect when the job restarts (``sp_cdc_stop_job`` /
``sp_cdc_start_job``), except retention and threshold, which the next cleanup reads
("sys.sp_cdc_change_job", Microsoft docs).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from mssql_cdc.emulator.cdc.cleanup import MAX_RETENTION, cleanup_change_table
from mssql_cdc.emulator.core.errors import SqlError, missing_parameter, unsupported
from mssql_cdc.emulator.core.results import StatementResult, result_set
from mssql_cdc.emulator.core.security import permission_denied
from mssql_cdc.emulator.protocol.temporal import datetime_text
from mssql_cdc.emulator.protocol.types import MAX, SqlType, scalar

if TYPE_CHECKING:
    from mssql_cdc.emulator.cdc.state import CaptureInstance
    from mssql_cdc.emulator.engine.executor import Executor

__all__ = ["OWNER_ONLY", "extra"]

OWNER_ONLY = frozenset(
    {
        "sp_cdc_enable_db",
        "sp_cdc_enable_table",
        "sp_cdc_disable_table",
        "sp_cdc_scan",
        "sp_cdc_cleanup_change_table",
        "sp_cdc_change_job",
        "sp_cdc_start_job",
        "sp_cdc_stop_job",
        "sp_cdc_help_jobs",
        "sp_addrolemember",
    }
)
_NV = scalar("nvarchar", length=128)
_LSN = scalar("binary", length=10)


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _instance(ex: Executor, proc: str, args: dict[str, object]) -> CaptureInstance:
    name = _text(args.get("capture_instance"))
    if name is None:
        raise missing_parameter(proc, "@capture_instance")
    instance = ex.db.cdc.instance(name)
    if instance is None:
        raise SqlError(
            22964, f"The capture instance '{name}' does not exist in the current database."
        )
    return instance


def _quoted(names: list[str]) -> str:
    return ", ".join(f"[{n}]" for n in names)


def extra(  # noqa: PLR0911, PLR0912 (a dispatch over procedures)
    ex: Executor, short: str, args: dict[str, object], positional: list[object]
) -> StatementResult | None:
    """Run ``short`` if it is one of this module's procedures, else ``None``."""

    cdc = ex.db.cdc
    if short == "sp_cdc_help_change_data_capture":
        return _help(ex, args)
    if short == "sp_cdc_get_ddl_history":
        return _ddl_history(ex, _instance(ex, short, args))
    if short == "sp_cdc_cleanup_change_table":
        instance = _instance(ex, short, args)
        if "low_water_mark" not in args:
            raise missing_parameter(short, "@low_water_mark")
        mark = args.get("low_water_mark")
        threshold = args.get("threshold")
        cleanup_change_table(
            cdc,
            instance.name,
            bytes(mark) if isinstance(mark, (bytes, bytearray)) else None,
            int(threshold) if threshold is not None else None,  # type: ignore[call-overload]
        )
        return StatementResult("exec")
    if short == "sp_cdc_change_job":
        job = (_text(args.get("job_type")) or "capture").lower()
        if job == "cleanup":
            retention = args.get("retention")
            if retention is not None:
                minutes = int(retention)  # type: ignore[call-overload]
                if not 0 < minutes <= MAX_RETENTION:
                    raise SqlError(
                        22994,
                        f"The retention value specified for the Change Data Capture cleanup "
                        f"process must be greater than 0 and less than or equal to "
                        f"{MAX_RETENTION}.",
                    )
                cdc.retention_minutes = minutes
            threshold = args.get("threshold")
            if threshold is not None:
                cdc.threshold = int(threshold)  # type: ignore[call-overload]
        else:
            interval = args.get("pollinginterval")
            if interval is not None:
                ex.db.capture_job.pending_interval = float(interval)  # type: ignore[arg-type]
        return StatementResult("exec")
    if short == "sp_cdc_help_jobs":
        return _help_jobs(ex)
    if short == "sp_help_job":
        return _help_job(ex, args)
    if short == "sp_cdc_stop_job":
        ex.db.capture_job.stop()
        return StatementResult("exec")
    if short == "sp_cdc_start_job":
        ex.db.capture_job.restart()
        return StatementResult("exec")
    if short == "sp_addrolemember":
        role = _text(args.get("rolename", positional[0] if positional else None))
        member = _text(args.get("membername", positional[1] if len(positional) > 1 else None))
        if role is None or member is None:
            raise missing_parameter(short, "@rolename")
        ex.db.security.add_role_member(role, member)
        return StatementResult("exec")
    return None


def _help(ex: Executor, args: dict[str, object]) -> StatementResult:

    schema = _text(args.get("source_schema"))
    name = _text(args.get("source_name"))
    rows = []
    for instance in sorted(ex.db.cdc.instances.values(), key=lambda i: i.name.lower()):
        source = instance.source
        if schema and schema.lower() != source.schema.lower():
            continue
        if name and name.lower() != source.name.lower():
            continue
        if not ex.db.security.can_read_changes(
            ex.user, (source.schema, source.name), instance.change_table, instance.role_name
        ):
            continue
        rows.append(
            (
                source.schema,
                source.name,
                instance.name,
                instance.object_id,
                source.object_id,
                bytes(instance.start_lsn),
                None,
                instance.supports_net_changes,
                False,
                instance.role_name,
                instance.index_name,
                "PRIMARY",
                datetime_text(instance.create_date),
                _quoted(source.primary_key) if source.primary_key else None,
                _quoted(instance.columns),
            )
        )
    columns = [
        ("source_schema", _NV),
        ("source_table", _NV),
        ("capture_instance", _NV),
        ("object_id", scalar("int")),
        ("source_object_id", scalar("int")),
        ("start_lsn", _LSN),
        ("end_lsn", _LSN),
        ("supports_net_changes", scalar("bit")),
        ("has_drop_pending", scalar("bit")),
        ("role_name", _NV),
        ("index_name", _NV),
        ("filegroup_name", _NV),
        ("create_date", scalar("datetime")),
        ("index_column_list", scalar("nvarchar", length=MAX)),
        ("captured_column_list", scalar("nvarchar", length=MAX)),
    ]
    return result_set(columns, rows)


def _job_names(ex: Executor) -> dict[str, str]:
    """``{job_type: job_name}`` of the database's CDC jobs (empty before the first table)."""
    if not (ex.db.cdc.enabled and ex.db.cdc.jobs_created):
        return {}
    return {kind: f"cdc.{ex.db.name}_{kind}" for kind in ("capture", "cleanup")}


def _job_id(name: str) -> uuid.UUID:
    return uuid.uuid5(uuid.NAMESPACE_URL, f"mssql-cdc-emulator-job:{name.lower()}")


def _help_jobs(ex: Executor) -> StatementResult:
    job = ex.db.capture_job
    interval = job.interval if job.interval is not None else 5.0
    rows = []
    for kind, name in _job_names(ex).items():
        capture = kind == "capture"
        rows.append(
            (
                _job_id(name),
                kind,
                name,
                500 if capture else None,
                10 if capture else None,
                True if capture else None,
                int(interval) if capture else None,
                None if capture else ex.db.cdc.retention_minutes,
                None if capture else ex.db.cdc.threshold,
            )
        )
    columns = [
        ("job_id", scalar("uniqueidentifier")),
        ("job_type", scalar("nvarchar", length=20)),
        ("job_name", _NV),
        ("maxtrans", scalar("int")),
        ("maxscans", scalar("int")),
        ("continuous", scalar("bit")),
        ("pollinginterval", scalar("bigint")),
        ("retention", scalar("bigint")),
        ("threshold", scalar("bigint")),
    ]
    return result_set(columns, rows)


#: the job result set of sp_help_job ("sp_help_job (Transact-SQL)", Result Sets)
_HELP_JOB_COLUMNS: list[tuple[str, SqlType]] = [
    ("job_id", scalar("uniqueidentifier")),
    ("originating_server", scalar("nvarchar", length=30)),
    ("name", _NV),
    ("enabled", scalar("tinyint")),
    ("description", scalar("nvarchar", length=512)),
    ("start_step_id", scalar("int")),
    ("category", _NV),
    ("owner", _NV),
    ("notify_level_eventlog", scalar("int")),
    ("notify_level_email", scalar("int")),
    ("notify_level_netsend", scalar("int")),
    ("notify_level_page", scalar("int")),
    ("notify_email_operator", _NV),
    ("notify_netsend_operator", _NV),
    ("notify_page_operator", _NV),
    ("delete_level", scalar("int")),
    ("date_created", scalar("datetime")),
    ("date_modified", scalar("datetime")),
    ("version_number", scalar("int")),
    ("last_run_date", scalar("int")),
    ("last_run_time", scalar("int")),
    ("last_run_outcome", scalar("int")),
    ("next_run_date", scalar("int")),
    ("next_run_time", scalar("int")),
    ("next_run_schedule_id", scalar("int")),
    ("current_execution_status", scalar("int")),
    ("current_execution_step", _NV),
    ("current_retry_attempt", scalar("int")),
    ("has_step", scalar("int")),
    ("has_schedule", scalar("int")),
    ("has_target", scalar("int")),
    ("type", scalar("int")),
]
#: per job type: description, category (the jobs sys.sp_cdc_add_job creates)
_JOB_KINDS = {
    "capture": ("CDC Log Scan Job", "REPL-LogReader"),
    "cleanup": ("CDC Cleanup Job", "REPL-Checkup"),
}


def _help_job(ex: Executor, args: dict[str, object]) -> StatementResult:
    """The job result set (``@job_aspect = N'JOB'``, or no job named). The emulator models
    ``job_id``, ``name``, ``enabled`` and ``current_execution_status`` (1 executing, 4
    idle); the other columns are what an Agent job that never ran holds (no notifications,
    last and next run 0, outcome 5 unknown). The steps, schedules and targets result sets
    (``@job_aspect`` ALL, STEPS, SCHEDULES, TARGETS) are not there (40517)."""
    if not ex.db.security.is_owner(ex.user):
        raise permission_denied("EXECUTE", "dbo", "sp_help_job", "msdb")
    wanted = _text(args.get("job_name"))
    aspect = (_text(args.get("job_aspect")) or ("ALL" if wanted else "JOB")).upper()
    if aspect != "JOB":
        raise unsupported(f"sp_help_job with @job_aspect = '{aspect}'")
    rows = []
    created = datetime_text(ex.db.cdc.jobs_created_at) if ex.db.cdc.jobs_created_at else None
    for kind, name in _job_names(ex).items():
        if wanted is not None and wanted.lower() != name.lower():
            continue
        running = kind == "capture" and ex.db.capture_job.running
        description, category = _JOB_KINDS[kind]
        rows.append(
            (
                _job_id(name),
                "EMULATOR",
                name,
                1,
                description,
                1,
                category,
                "sa",
                0,
                0,
                0,
                0,
                None,
                None,
                None,
                0,
                created,
                created,
                1,
                0,
                0,
                5,
                0,
                0,
                0,
                1 if running else 4,
                "0 (unknown)",
                0,
                1,
                1,
                1,
                1,
            )
        )
    if wanted is not None and not rows:
        raise SqlError(14262, f"The specified @job_name ('{wanted}') does not exist.", klass=16)
    return result_set(_HELP_JOB_COLUMNS, rows)


def _ddl_history(ex: Executor, instance: CaptureInstance) -> StatementResult:

    found = ex.db.system.execute(
        'SELECT required_column_update, ddl_command, ddl_lsn, ddl_time FROM cdc."ddl_history" '
        "WHERE object_id = ? ORDER BY ddl_lsn",
        [instance.object_id],
    ).fetchall()
    rows = [(instance.source.schema, instance.source.name, instance.name, *r) for r in found]
    columns = [
        ("source_schema", _NV),
        ("source_table", _NV),
        ("capture_instance", _NV),
        ("required_column_update", scalar("bit")),
        ("ddl_command", scalar("nvarchar", length=MAX)),
        ("ddl_lsn", _LSN),
        ("ddl_time", scalar("datetime")),
    ]
    return result_set(columns, rows)
