"""Retention headroom: the hours before CDC cleanup deletes changes a stream has not read yet
(the facts' ``retention_headroom_hours``, docs/monitoring.md; ADR 0171).

The cleanup job deletes the changes committed more than its retention period before the newest
commit (docs/reference/sql-server-cdc.md, "Retention and cleanup"), by the clock. So the
oldest change a stream may not have read, the first one after its batch's end, is deleted
``retention - (now - end_commit_ts)`` hours from ``now``; when the batch reached the newest
commit the next change is not committed yet and the headroom is the whole retention.

The retention is the cleanup job's (``sys.sp_cdc_help_jobs``, column ``retention`` in minutes;
it reads ``msdb.dbo.cdc_jobs`` and needs ``db_owner`` in the database). The planner reads it
once an hour (:class:`RetentionReader`) and hands it to the batch's last range.

A login that cannot read it (the least-privileged reader docs/permissions.md recommends) gets
:func:`watermark_headroom_hours` instead: the hours between the cleanup watermark (the commit
time of the capture instance's minimum LSN, which any reader sees) and the batch end, and the
facts say so (``detail.headroom_from`` = ``"cleanup_watermark"``). Once cleanup runs, the
watermark trails the newest commit by about the retention, so both measures agree; before
cleanup first runs, the watermark is the capture instance's start and the figure is the
instance's age, smaller than the truth: ``backfill(min_headroom_hours=...)`` pauses early rather
than never (ADR 0171, amended).
"""

from __future__ import annotations

import datetime as dt
import logging
import time

from mssql_cdc.errors import SqlServerError
from mssql_cdc.source.client import CdcClient
from mssql_cdc.source.sql import CHECK_HELP_JOBS, HELP_JOBS_COLUMNS

__all__ = ["WATERMARK", "RetentionReader", "headroom_hours", "watermark_headroom_hours"]

log = logging.getLogger("mssql_cdc.source")

#: how long a retention read (or the failure to read it) is kept
REFRESH_S = 3600.0


def headroom_hours(
    retention_minutes: int | None,
    now: dt.datetime,
    end_commit: dt.datetime | None,
    newest_commit: dt.datetime | None,
) -> float | None:
    """Hours from ``now`` before cleanup deletes the first change after ``end_commit`` (the
    batch's end); the whole retention when the batch reached ``newest_commit``; ``None``
    without the retention or the batch end's time. Times are UTC."""
    if retention_minutes is None or end_commit is None:
        return None
    retention = retention_minutes / 60.0
    if newest_commit is not None and newest_commit <= end_commit:
        return retention
    return retention - (now - end_commit).total_seconds() / 3600.0


#: ``headroom_from`` of a headroom measured from the cleanup watermark
WATERMARK = "cleanup_watermark"


def watermark_headroom_hours(
    end_commit: dt.datetime | None, watermark: dt.datetime | None
) -> float | None:
    """Hours from the cleanup watermark (the commit time of the capture instance's minimum
    LSN, the oldest change cleanup left) to ``end_commit`` (the batch's end): how far the
    stream's position is ahead of what cleanup deletes; ``None`` without either time. Times
    are UTC."""
    if end_commit is None or watermark is None:
        return None
    return (end_commit - watermark).total_seconds() / 3600.0


class RetentionReader:
    """The cleanup job's retention in minutes for the planner's connection, read at most once
    per :data:`REFRESH_S`; ``None`` when it cannot be read (said once at INFO)."""

    def __init__(self, client: CdcClient, refresh_s: float = REFRESH_S) -> None:
        self.client = client
        self.refresh_s = refresh_s
        self._value: int | None = None
        self._read_at: float | None = None
        self._said = False

    def minutes(self) -> int | None:
        now = time.monotonic()
        if self._read_at is not None and now - self._read_at < self.refresh_s:
            return self._value
        self._read_at = now
        self._value = self._read()
        return self._value

    def _read(self) -> int | None:
        try:
            rows = self.client.rows(CHECK_HELP_JOBS, needs=HELP_JOBS_COLUMNS)
        except SqlServerError as exc:
            if not self._said:
                self._said = True
                log.info(
                    "retention_headroom_hours is measured from the cleanup watermark: this "
                    "login cannot read the cleanup job's retention (sys.sp_cdc_help_jobs needs "
                    "db_owner): %s",
                    exc,
                )
            return None
        for row in rows:
            if str(row["job_type"]).lower() == "cleanup":
                value = row["retention"]
                return None if value is None else int(value)
        return None
