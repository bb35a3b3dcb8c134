"""The pre-flight check: can these options stream these capture instances? (docs/permissions.md)

:func:`check` connects with the stream's own options (the login the stream will use) and
returns a :class:`CheckReport`: one :class:`CheckItem` per question, each ``pass``, ``fail`` (with
the exact fix) or ``skip`` (not asked, or not answerable with this login: the detail says
why). The questions, in order; a failure skips the questions that depend on it:

* ``reachable``, ``tls``, ``login``: the connection, told apart by the native client's errors
  (:class:`~mssql_cdc.errors.ConnectionLostError`, :class:`~mssql_cdc.errors.TlsError`,
  :class:`~mssql_cdc.errors.LoginError`);
* ``cdc_enabled`` and ``snapshot_isolation`` (when asked for): ``sys.databases``;
* ``capture_job``, ``capture_latency``, ``retention``: ``sys.sp_cdc_help_jobs`` (db_owner),
  ``msdb.dbo.sp_help_job`` (msdb rights) and ``sys.dm_cdc_log_scan_sessions`` (``VIEW DATABASE
  STATE``); a reader login usually lacks these rights, and those lines are then skipped;
* ``time_zone``: the clock ``sourceTimeZone`` resolves to (:mod:`mssql_cdc.source.clock`);
* ``commit_times``: SELECT on ``cdc.lsn_time_mapping``, which every change read joins;
* per capture instance: ``instance``, ``source_select``, ``gating_role``,
  ``change_table_select``. ``sys.sp_cdc_help_change_data_capture`` lists only the instances
  the login may read; for one it lists not, the change function tells "exists" (error 229)
  from "not found" (208), and ``cdc.change_tables`` (when readable) names its source table
  and gating role, so the check can say which grant is missing.

Runs on the driver (or anywhere: no Spark); never logs or returns a secret.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from mssql_cdc.connection_string import attributes, move_password
from mssql_cdc.errors import (
    ConnectionLostError,
    LoginError,
    SqlServerError,
    SqlTimeoutError,
    TlsError,
)
from mssql_cdc.options import parse_options
from mssql_cdc.source.client import (
    COMMIT_TIME_COLUMNS,
    PERMISSION_DENIED,
    PERMISSION_DENIED_NUMBERS,
    CaptureInstance,
    CdcClient,
    user_of,
)
from mssql_cdc.source.sql import (
    CHANGE_TABLE_OWNER_COLUMNS,
    CHECK_CAPTURE_JOB_STATE,
    CHECK_CHANGE_TABLE_OWNER,
    CHECK_DATABASE,
    CHECK_HELP_JOBS,
    CHECK_IS_ROLE_MEMBER,
    CHECK_SCAN_LATENCY,
    DATABASE_COLUMNS,
    HELP_JOBS_COLUMNS,
    JOB_STATE_COLUMNS,
    SCAN_LATENCY_COLUMNS,
    change_table,
    check_select,
    quote_name,
    table_name,
)

__all__ = ["CheckItem", "CheckReport", "Status", "check"]

log = logging.getLogger("mssql_cdc.source")

Status = Literal["pass", "fail", "skip"]
#: the questions of a report, in order (per capture instance: the last four)
CHECKS = (
    "reachable",
    "tls",
    "login",
    "cdc_enabled",
    "capture_job",
    "capture_latency",
    "retention",
    "time_zone",
    "commit_times",
    "snapshot_isolation",
    "instance",
    "source_select",
    "gating_role",
    "change_table_select",
)
#: the questions asked after a login, before the per-instance ones
_DATABASE_CHECKS = CHECKS[CHECKS.index("cdc_enabled") : CHECKS.index("instance")]
#: the per-instance questions
_INSTANCE_CHECKS = CHECKS[CHECKS.index("instance") :]
_INVALID_OBJECT = 208
_COLUMN_DENIED = 230
_CANNOT_OPEN_DATABASE = 4060
_EXECUTING = 1


@dataclass(frozen=True)
class CheckItem:
    """One question of the check: ``name`` (see ``CHECKS``), its ``status``, what was found
    (``detail``) and, for a failure, the exact ``fix``; ``capture_instance`` for the
    per-instance questions."""

    name: str
    status: Status
    detail: str
    fix: str = ""
    capture_instance: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "detail": self.detail,
            "fix": self.fix,
            "capture_instance": self.capture_instance,
        }


@dataclass(frozen=True)
class CheckReport:
    """What :func:`check` found: ``server`` and ``database`` as the options name them, and
    the items in ``CHECKS`` order (per instance for the last four)."""

    server: str
    database: str | None
    items: tuple[CheckItem, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        """No item failed."""
        return not self.failures

    @property
    def failures(self) -> tuple[CheckItem, ...]:
        return tuple(i for i in self.items if i.status == "fail")

    def item(self, name: str, capture_instance: str | None = None) -> CheckItem:
        """The item ``name`` (of ``capture_instance`` for the per-instance questions).

        Raises:
            KeyError: no such item.
        """
        for i in self.items:
            if i.name == name and i.capture_instance == capture_instance:
                return i
        raise KeyError(name if capture_instance is None else f"{name} of {capture_instance}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "database": self.database,
            "ok": self.ok,
            "items": [i.to_dict() for i in self.items],
        }


class _Items:
    def __init__(self) -> None:
        self.items: list[CheckItem] = []

    def add(
        self, name: str, status: Status, detail: str, fix: str = "", ci: str | None = None
    ) -> None:
        self.items.append(CheckItem(name, status, detail, fix, ci))

    def skip(self, names: Sequence[str], why: str, ci: str | None = None) -> None:
        for name in names:
            self.add(name, "skip", why, ci=ci)


def check(
    options: Mapping[str, object],
    capture_instances: Sequence[str] = (),
    *,
    schedule_hours: float = 24.0,
    snapshot_isolation: bool | None = None,
    max_capture_latency_seconds: float = 300.0,
) -> CheckReport:
    """Checks that the stream of ``options`` can run: connection, CDC, the capture job, each
    capture instance's grants, retention, the server clock (module docstring).

    Args:
        options: the data source options of ``stream()`` (``captureInstance`` may be left
            out when ``capture_instances`` is given).
        capture_instances: the instances to check (default: ``captureInstance``).
        schedule_hours: how often the stream runs (a job's schedule; a continuous stream:
            its trigger interval); the cleanup job's retention must be at least twice that,
            so that one missed run loses nothing.
        snapshot_isolation: check ``ALLOW_SNAPSHOT_ISOLATION`` (default: when the
            ``isolationLevel`` option is ``snapshot``).
        max_capture_latency_seconds: the newest capture scan's latency above which
            ``capture_latency`` fails.

    Returns:
        The report; ``report.ok`` is false when an item failed.

    Raises:
        ValueError: bad options, no capture instance, or a non-positive ``schedule_hours``.
    """
    raw = {str(k): "" if v is None else str(v) for k, v in options.items()}
    names = [str(c) for c in capture_instances] or [
        v for k, v in raw.items() if k.lower() == "captureinstance" and v
    ]
    if not names:
        raise ValueError("check: give a capture instance (option 'captureInstance')")
    if not schedule_hours > 0:
        raise ValueError(f"check: schedule_hours must be positive, got {schedule_hours!r}")
    if not any(k.lower() == "captureinstance" for k in raw):
        raw["captureInstance"] = names[0]
    parsed = parse_options(move_password(raw))
    if snapshot_isolation is None:
        snapshot_isolation = parsed.isolation_level.lower() == "snapshot"
    server, database, encrypt = _where(parsed.connection_string)
    out = _Items()
    client = CdcClient(parsed)
    try:
        if _connect(client, out, server, database, encrypt):
            _after_login(
                client,
                out,
                names,
                schedule_hours=schedule_hours,
                snapshot_isolation=snapshot_isolation,
                max_latency=max_capture_latency_seconds,
            )
    finally:
        client.close()
    return CheckReport(server, database, tuple(out.items))


def _where(connection_string: str) -> tuple[str, str | None, str]:
    """The server, the database and how TLS is asked for (``Encrypt=``, and ``+trust`` when
    ``TrustServerCertificate=yes``)."""
    server, database, encrypt, trust = "", None, "yes", False
    for a in attributes(connection_string):
        key = a.key.lower()
        if key in ("server", "address", "addr", "data source"):
            server = a.value
        elif key in ("database", "initial catalog"):
            database = a.value
        elif key == "encrypt":
            encrypt = a.value.strip().lower()
        elif key == "trustservercertificate":
            trust = a.value.strip().lower() in ("yes", "true")
    return server, database, encrypt + ("+trust" if trust else "")


def _tls_detail(encrypt: str) -> str:
    mode, _, trust = encrypt.partition("+")
    if mode in ("no", "optional", "false"):
        return (
            f"Encrypt={mode}: only the login packet is encrypted (set Encrypt=yes to encrypt "
            "the session)"
        )
    if trust:
        return (
            f"Encrypt={mode}: the session is encrypted; TrustServerCertificate=yes, so the "
            "server's certificate was not verified"
        )
    return f"Encrypt={mode}: the session is encrypted and the server's certificate verified"


def _connect(
    client: CdcClient, out: _Items, server: str, database: str | None, encrypt: str
) -> bool:
    user = user_of(client.options)
    later = _DATABASE_CHECKS
    try:
        client.connection  # noqa: B018 (opens it)
    except TlsError as exc:
        out.add("reachable", "pass", f"{server} answered")
        fix = (
            "The server offers no TLS: give SQL Server a certificate (SQL Server Configuration "
            "Manager, Protocols, Certificate) or, on a network you trust, connect with "
            "Encrypt=no"
        )
        if "certif" in str(exc).lower() or "verif" in str(exc).lower():
            fix = (
                "The server's certificate was not accepted: install its CA on this machine, set "
                "HostNameInCertificate to the name it carries, or (a server you trust only) "
                "TrustServerCertificate=yes (mssql-cdc's --trust-server-certificate)"
            )
        out.add("tls", "fail", f"Encrypt={encrypt.partition('+')[0]}: {exc}", fix)
        out.skip(["login", *later], "no connection")
        return False
    except LoginError as exc:
        out.add("reachable", "pass", f"{server} answered")
        out.add("tls", "pass", _tls_detail(encrypt))
        if exc.number == _CANNOT_OPEN_DATABASE:
            fix = (
                f"Database {database!r} does not exist or login {user!r} has no user in it: "
                f"in that database run CREATE USER {quote_name(user)} FOR LOGIN "
                f"{quote_name(user)};"
            )
        else:
            fix = (
                f"Check the login {user!r} and its password (the environment variable the "
                "password comes from); SQL logins need SQL Server and Windows Authentication "
                "mode; the server's error log tells the reason of an 18456 by its state"
            )
        out.add("login", "fail", str(exc), fix)
        out.skip(later, "no connection")
        return False
    except (ConnectionLostError, SqlTimeoutError) as exc:
        if "encrypt" in str(exc).lower() or "tls" in str(exc).lower():
            out.add("reachable", "pass", f"{server} answered")
            out.add(
                "tls",
                "fail",
                f"Encrypt={encrypt.partition('+')[0]}: {exc}",
                "The server offers no TLS: give SQL Server a certificate (SQL Server "
                "Configuration Manager, Protocols, Certificate) or, on a network you trust, "
                "connect with Encrypt=no",
            )
            out.skip(["login", *later], "no connection")
            return False
        out.add(
            "reachable",
            "fail",
            f"{server}: {exc}",
            "Check the host and port (Server=tcp:HOST,PORT; SQL Server listens on 1433 by "
            "default), that SQL Server accepts TCP connections (SQL Server Configuration "
            "Manager, TCP/IP enabled) and that no firewall blocks the port",
        )
        out.skip(["tls", "login", *later], "no connection")
        return False
    except SqlServerError as exc:
        out.add("reachable", "pass", f"{server} answered")
        out.add("tls", "pass", _tls_detail(encrypt))
        out.add("login", "fail", str(exc), "Fix what SQL Server said, then run check again")
        out.skip(later, "no connection")
        return False
    out.add("reachable", "pass", f"{server} answered")
    out.add("tls", "pass", _tls_detail(encrypt))
    out.add("login", "pass", f"logged in as {user!r}")
    return True


def _rows(
    client: CdcClient, sql: str, needs: Sequence[str], params: list[Any] | None = None
) -> list[dict[str, Any]]:
    return client.rows(sql, params, needs=needs)


def _after_login(
    client: CdcClient,
    out: _Items,
    names: Sequence[str],
    *,
    schedule_hours: float,
    snapshot_isolation: bool,
    max_latency: float,
) -> None:
    rows = _rows(client, CHECK_DATABASE, DATABASE_COLUMNS)
    db: dict[str, Any] = rows[0] if rows else {"name": "?", "is_cdc_enabled": False}
    db_name = str(db["name"])
    enabled = bool(db["is_cdc_enabled"])
    if enabled:
        out.add("cdc_enabled", "pass", f"CDC is enabled on database {db_name!r}")
    else:
        out.add(
            "cdc_enabled",
            "fail",
            f"CDC is not enabled on database {db_name!r}",
            f"As sysadmin: USE {quote_name(db_name)}; EXEC sys.sp_cdc_enable_db; (then enable "
            "the tables, see sql/setup.sql)",
        )
    if enabled:
        _jobs(client, out, schedule_hours, max_latency)
    else:
        out.skip(["capture_job", "capture_latency", "retention"], "CDC is not enabled")
    _time_zone(client, out)
    if enabled:
        _commit_times(client, out)
    else:
        out.skip(["commit_times"], "CDC is not enabled")
    if snapshot_isolation:
        if int(db["snapshot_isolation_state"] or 0) == 1:
            out.add("snapshot_isolation", "pass", f"ALLOW_SNAPSHOT_ISOLATION is ON in {db_name!r}")
        else:
            out.add(
                "snapshot_isolation",
                "fail",
                f"isolationLevel=snapshot is asked for, but database {db_name!r} does not allow "
                "snapshot isolation",
                f"As a DBA: ALTER DATABASE {quote_name(db_name)} SET ALLOW_SNAPSHOT_ISOLATION ON;",
            )
    else:
        out.add("snapshot_isolation", "skip", "not asked for (isolationLevel is not snapshot)")
    instances = client.capture_instances() if enabled else []
    for name in names:
        per = _INSTANCE_CHECKS
        if not enabled:
            out.skip(per, "CDC is not enabled", name)
            continue
        _instance(client, out, name, instances)


def _skip_reason(exc: SqlServerError, needs: str) -> str:
    return f"cannot tell with this login ({needs}); SQL Server said: {exc}"


def _jobs(client: CdcClient, out: _Items, schedule_hours: float, max_latency: float) -> None:
    try:
        jobs = _rows(client, CHECK_HELP_JOBS, HELP_JOBS_COLUMNS)
    except SqlServerError as exc:
        why = _skip_reason(exc, "sys.sp_cdc_help_jobs needs db_owner; run check once as one")
        out.skip(["capture_job", "capture_latency", "retention"], why)
        return
    by_type = {str(j["job_type"]).lower(): j for j in jobs}
    capture, cleanup = by_type.get("capture"), by_type.get("cleanup")
    if capture is None:
        out.add(
            "capture_job",
            "fail",
            "the database has no CDC capture job",
            "EXEC sys.sp_cdc_add_job @job_type = N'capture'; (SQL Server Agent must run)",
        )
    else:
        _capture_job(client, out, str(capture["job_name"]), capture["pollinginterval"])
    _latency(client, out, max_latency)
    if cleanup is None or cleanup["retention"] is None:
        out.add(
            "retention",
            "fail",
            "the database has no CDC cleanup job",
            "EXEC sys.sp_cdc_add_job @job_type = N'cleanup';",
        )
        return
    minutes = int(cleanup["retention"])
    needed = math.ceil(2 * schedule_hours * 60)
    text = (
        f"retention {minutes:,} min ({minutes / 60:g} h), the stream runs every "
        f"{schedule_hours:g} h"
    )
    if minutes >= needed:
        out.add("retention", "pass", text)
    else:
        out.add(
            "retention",
            "fail",
            f"{text}: changes older than the retention are deleted before a late run reads them",
            f"EXEC sys.sp_cdc_change_job @job_type = N'cleanup', @retention = {needed}; (at least "
            "twice the schedule), or run the stream more often",
        )


def _capture_job(client: CdcClient, out: _Items, job: str, interval: object) -> None:
    try:
        state = _rows(client, CHECK_CAPTURE_JOB_STATE, JOB_STATE_COLUMNS, [job])
    except SqlServerError as exc:
        why = _skip_reason(exc, "msdb.dbo.sp_help_job needs SQLAgentReaderRole in msdb")
        out.add("capture_job", "skip", f"job {job} exists; whether it runs: {why}")
        return
    status = int(state[0]["current_execution_status"]) if state else 0
    if status == _EXECUTING:
        out.add("capture_job", "pass", f"{job} is running (polling interval {interval} s)")
        return
    out.add(
        "capture_job",
        "fail",
        f"{job} is not running (current_execution_status {status}): no new changes are captured",
        "Start SQL Server Agent, then EXEC sys.sp_cdc_start_job @job_type = N'capture';",
    )


def _latency(client: CdcClient, out: _Items, max_latency: float) -> None:
    try:
        rows = _rows(client, CHECK_SCAN_LATENCY, SCAN_LATENCY_COLUMNS)
    except SqlServerError as exc:
        out.add("capture_latency", "skip", _skip_reason(exc, "needs VIEW DATABASE STATE"))
        return
    if not rows:
        out.add("capture_latency", "pass", "no capture scan since SQL Server started")
        return
    latency = float(rows[0]["latency"] or 0)
    text = f"the newest capture scan ended {latency:g} s after the last commit it captured"
    if latency <= max_latency:
        out.add("capture_latency", "pass", text)
    else:
        out.add(
            "capture_latency",
            "fail",
            f"{text} (more than {max_latency:g} s)",
            "Capture is behind the log: look at sys.dm_cdc_errors and long transactions; "
            "raise @maxtrans/@maxscans or lower @pollinginterval with EXEC "
            "sys.sp_cdc_change_job @job_type = N'capture', ... then restart the job",
        )


def _time_zone(client: CdcClient, out: _Items) -> None:
    option = client.options.source_time_zone
    try:
        clock = client.server_clock()
    except SqlServerError as exc:
        out.add("time_zone", "fail", f"cannot read the server clock: {exc}", "")
        return
    if clock.zone is not None:
        how = "as configured" if option.lower() != "auto" else "CURRENT_TIMEZONE_ID()"
        out.add("time_zone", "pass", f"commit times are converted with {clock.zone} ({how})")
        return
    out.add(
        "time_zone",
        "fail",
        f"the server's time zone is not known (SQL Server before 2022): only its current UTC "
        f"offset ({clock.offset_minutes:+d} min), wrong across DST changes",
        "Set the option sourceTimeZone to the server's Windows time zone name (e.g. "
        "--option 'sourceTimeZone=W. Europe Standard Time'); UTC servers: sourceTimeZone=UTC",
    )


def _commit_times(client: CdcClient, out: _Items) -> None:
    """Every change read joins ``cdc.lsn_time_mapping`` (commit LSN -> commit time) and the
    stream's positions are read from it; no Microsoft page says which logins may read it."""
    number = _select_refusal(client, "cdc", "lsn_time_mapping", COMMIT_TIME_COLUMNS, exists=True)
    if number is None:
        out.add("commit_times", "pass", "SELECT on cdc.lsn_time_mapping")
    elif number in PERMISSION_DENIED_NUMBERS:
        out.add(
            "commit_times",
            "fail",
            "the login cannot SELECT from cdc.lsn_time_mapping (commit LSNs and times)",
            f"GRANT SELECT ON cdc.lsn_time_mapping TO {quote_name(user_of(client.options))};",
        )
    else:
        out.add("commit_times", "skip", f"cdc.lsn_time_mapping answered error {number}")


def _select_refusal(
    client: CdcClient,
    schema: str,
    table: str,
    columns: Sequence[str] = (),
    *,
    exists: bool = False,
) -> int | None:
    """Why the login may not SELECT ``columns`` of ``schema.table`` (all columns when none), as
    the SQL Server error a read would raise: 208 (it cannot see the table), 229 (no SELECT),
    230 (a column refused); ``None`` when it may.

    A table the login holds no permission on is invisible to it ("Metadata Visibility
    Configuration"): ``OBJECT_ID`` is NULL as for a missing one. For a table known to
    ``exists`` (``cdc.lsn_time_mapping``, the change table of a listed instance) that is 229.
    """
    row = _select_probe(client, schema, table, columns)
    if row["object_id"] is None:
        return PERMISSION_DENIED if exists else _INVALID_OBJECT
    refused = _refused_columns(row, columns)
    if not columns:
        return None if row["can_select"] == 1 else PERMISSION_DENIED
    if not refused:
        return None
    return PERMISSION_DENIED if row["can_select"] != 1 else _COLUMN_DENIED


def _select_probe(
    client: CdcClient, schema: str, table: str, columns: Sequence[str]
) -> dict[str, Any]:
    """The row of :func:`~mssql_cdc.source.sql.check_select` for ``schema.table``."""
    needs = ("object_id", "can_select", *(f"column_{n}" for n in range(1, len(columns) + 1)))
    (row,) = client.rows(check_select(columns), [table_name(schema, table), *columns], needs=needs)
    return row


def _refused_columns(row: dict[str, Any], columns: Sequence[str]) -> list[str]:
    return [c for n, c in enumerate(columns, start=1) if row[f"column_{n}"] != 1]


def _instance(
    client: CdcClient, out: _Items, name: str, instances: Sequence[CaptureInstance]
) -> None:
    user = quote_name(user_of(client.options))
    found = [i for i in instances if i.name == name] or [
        i for i in instances if i.name.lower() == name.lower()
    ]
    ct = change_table(name)
    ct_error = _select_refusal(client, "cdc", f"{name}_CT", exists=bool(found))
    ct_denied = ct_error is not None
    if found:
        inst = found[0]
        source = table_name(inst.source_schema, inst.source_table)
        out.add("instance", "pass", f"{inst.name} captures {source}", ci=name)
        _source_select(client, out, name, (inst.source_schema, inst.source_table), inst.columns)
        role = inst.role_name
        out.add(
            "gating_role",
            "pass",
            f"member of the gating role {role!r}" if role else "the instance has no gating role",
            ci=name,
        )
    else:
        denied = client.change_access_denied(name)
        if denied is None and ct_error not in PERMISSION_DENIED_NUMBERS:
            readable = ", ".join(i.name for i in instances) or "none"
            out.add(
                "instance",
                "fail",
                f"capture instance {name!r} not found (instances this login can read: {readable})",
                "As db_owner: EXEC sys.sp_cdc_enable_table @source_schema = N'<schema>', "
                f"@source_name = N'<table>', @role_name = NULL, @capture_instance = N'{name}'; "
                "or fix the name (EXEC sys.sp_cdc_help_change_data_capture lists them)",
                ci=name,
            )
            out.skip(_INSTANCE_CHECKS[1:], "no such capture instance", name)
            return
        out.add("instance", "pass", f"{name} exists (this login cannot read it yet)", ci=name)
        _diagnose(client, out, name, user, ct_denied)
    if ct_denied:
        out.add(
            "change_table_select",
            "fail",
            f"the login cannot SELECT from the change table {ct}",
            f"GRANT SELECT ON {ct} TO {user};",
            ci=name,
        )
    else:
        out.add("change_table_select", "pass", f"SELECT on {ct}", ci=name)


def _source_select(
    client: CdcClient, out: _Items, ci: str, source: tuple[str, str], columns: Sequence[str]
) -> None:
    schema, table = source
    name = table_name(schema, table)
    number = _select_refusal(client, schema, table, columns)
    if number is None:
        out.add("source_select", "pass", f"SELECT on the captured columns of {name}", ci=ci)
        return
    user = quote_name(user_of(client.options))
    if number == _COLUMN_DENIED:
        refused = _refused_columns(_select_probe(client, schema, table, columns), columns)
        listed = ", ".join(quote_name(c) for c in refused)
        out.add(
            "source_select",
            "fail",
            f"the login may SELECT {name} but not its captured column(s) {listed} (a column "
            "DENY wins over the table's GRANT)",
            f"REVOKE SELECT ON {name} ({listed}) FROM {user};",
            ci=ci,
        )
        return
    out.add(
        "source_select",
        "fail",
        f"the login cannot SELECT the captured columns of {name}",
        f"GRANT SELECT ON {name} TO {user};",
        ci=ci,
    )


def _diagnose(client: CdcClient, out: _Items, name: str, user: str, ct_denied: bool) -> None:
    """An instance that exists but the login may not read: which grant is missing."""
    try:
        rows = _rows(client, CHECK_CHANGE_TABLE_OWNER, CHANGE_TABLE_OWNER_COLUMNS, [name])
    except SqlServerError as exc:
        if exc.number not in (*PERMISSION_DENIED_NUMBERS, _INVALID_OBJECT):
            raise
        rows = []
    if not rows:
        if ct_denied:
            why = "cannot tell until the change table grant below is in place; run check again"
            out.skip(["source_select", "gating_role"], why, name)
            return
        out.add(
            "source_select",
            "fail",
            "the login lacks SELECT on the source table's captured columns, or membership in "
            "the instance's gating role (it cannot read cdc.change_tables to tell which)",
            f"As db_owner, EXEC sys.sp_cdc_help_change_data_capture shows the instance's "
            f"source table and role_name; then GRANT SELECT ON <source table> TO {user}; and, "
            f"with a role, ALTER ROLE <role_name> ADD MEMBER {user}; (GRANT SELECT ON "
            f"cdc.change_tables TO {user}; lets check tell which)",
            ci=name,
        )
        out.skip(["gating_role"], "see source_select", name)
        return
    row = rows[0]
    schema, table, role = row["source_schema"], row["source_table"], row["role_name"]
    if schema is None or table is None:
        out.add(
            "source_select",
            "fail",
            "the login has no permission on the source table (it cannot even see its name)",
            f"As db_owner, EXEC sys.sp_cdc_help_change_data_capture names the source table; "
            f"GRANT SELECT ON <source table> TO {user};",
            ci=name,
        )
    else:
        _source_select(client, out, name, (str(schema), str(table)), ())
    if not role:
        out.add("gating_role", "pass", "the instance has no gating role", ci=name)
        return
    member = client.scalar(CHECK_IS_ROLE_MEMBER, [str(role)])
    if member == 1:
        out.add("gating_role", "pass", f"member of the gating role {role!r}", ci=name)
        return
    out.add(
        "gating_role",
        "fail",
        f"the login's user is not a member of the instance's gating role {role!r}",
        f"ALTER ROLE {quote_name(str(role))} ADD MEMBER {user};",
        ci=name,
    )
