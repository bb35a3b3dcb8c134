"""The metrics directory: how the stream reader's tasks hand figures to the Delta sink.

Each partition of a micro-batch writes one JSON file (its round trip, read time, megabytes,
network wait; the batch's last partition also where the stream is: retention watermark, source
max commit, capture lag, end of the batch), and the reader writes one event file per schema
change, capture-instance switch or data skip. The sink folds them into the batch's facts row and
deletes them (``metricsPath`` in docs/data-sources.md; the facts table in docs/sink.md).

Contract (both sides use only this module):

* ``metrics_dir(path)`` opens a directory: a local or FUSE path (``/Volumes/...``), or a URI that
  ``pyarrow.fs`` opens (``s3://``, ``gs://``, ``abfss://``, ``hdfs://``, ``file://``); ``dbfs:/``
  is a ``ValueError`` naming the fix (use the ``/dbfs/...`` FUSE path or a Volume).
* Files are written whole: a temporary name, then a rename (one upload where a store has no
  rename). Partition files are ``part-<from_lsn>-<to_lsn>-<attempt>.json``; a retried task
  writes another attempt, and readers keep one file per ``(from_lsn, to_lsn)``, the latest by
  ``written_at``. Event files are ``event-<kind>-<key>.json`` (kind :data:`WARNING_EVENT`: a
  planning warning, ``mssql_cdc.source.run_warnings``); a chunked snapshot's tasks write
  ``chunk-<i>.json``.
* Writing never fails a read: an unwritable file is a WARNING under ``mssql_cdc.metrics``.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

import pyarrow.fs as pafs

__all__ = [
    "WARNING_EVENT",
    "MetricsDir",
    "PartitionMetrics",
    "metrics_dir",
]

log = logging.getLogger("mssql_cdc.metrics")

#: the kind of a planning warning's event file (``{"message": ...}``), folded by the sink into
#: the next micro-batch's ``detail.warnings`` rather than written as an event row
WARNING_EVENT = "warning"


@dataclass
class PartitionMetrics:
    """What one partition (one LSN range read on its own connection) measured.

    Times are seconds, sizes megabytes, LSNs canonical text (``0x`` + 20 hex digits),
    timestamps ISO-8601 UTC with milliseconds (``2026-11-30T05:36:11.123Z``).
    """

    from_lsn: str
    to_lsn: str
    rows: int
    source_rtt_ms: float | None = None
    read_seconds: float | None = None
    read_mb: float | None = None
    network_wait_ms: int | None = None
    #: only on the batch's last partition (the one whose ``to_lsn`` is the batch end)
    last: bool = False
    end_lsn: str | None = None
    end_commit_ts: str | None = None
    retention_watermark_ts: str | None = None
    source_max_commit_ts: str | None = None
    capture_lag_seconds: float | None = None
    #: hours before cleanup deletes the first change after the batch end (None: neither the
    #: retention nor the watermark known; mssql_cdc.source.headroom)
    retention_headroom_hours: float | None = None
    #: how the headroom was measured: None from the cleanup job's retention, "cleanup_watermark"
    #: from the watermark when the login cannot read the retention
    headroom_from: str | None = None
    warnings: list[str] = field(default_factory=list)
    written_at: float = field(default_factory=time.time)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PartitionMetrics:
        known = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in known})


class MetricsDir:
    """A metrics directory on a ``pyarrow.fs`` file system."""

    def __init__(self, fs: pafs.FileSystem, base: str, display: str) -> None:
        self.fs = fs
        self.base = base.rstrip("/")
        self.display = display

    def __repr__(self) -> str:
        return f"MetricsDir({self.display!r})"

    def _write(self, name: str, payload: dict[str, Any]) -> bool:
        data = json.dumps(payload, sort_keys=True).encode()
        final = f"{self.base}/{name}"
        temp = f"{self.base}/.{name}.{uuid.uuid4().hex}.tmp"
        try:
            self.fs.create_dir(self.base, recursive=True)
            with self.fs.open_output_stream(temp) as out:
                out.write(data)
            try:
                self.fs.move(temp, final)
            except (OSError, NotImplementedError):  # a store without rename: one upload
                with self.fs.open_output_stream(final) as out:
                    out.write(data)
                self.fs.delete_file(temp)
        except OSError as exc:
            log.warning("could not write metrics file %s/%s: %s", self.display, name, exc)
            return False
        return True

    def write_partition(self, metrics: PartitionMetrics) -> bool:
        """Writes one partition's file; ``False`` (with a WARNING) if it could not."""
        attempt = uuid.uuid4().hex[:12]
        name = f"part-{metrics.from_lsn}-{metrics.to_lsn}-{attempt}.json"
        return self._write(name, asdict(metrics))

    def write_chunk(self, chunk: int, payload: dict[str, Any]) -> bool:
        """Writes a snapshot chunk's file ``chunk-<chunk>.json`` (rows, bytes, seconds,
        ``max_lsn`` after the read; ``snapshotChunks`` in docs/data-sources.md); a retried task
        overwrites it."""
        return self._write(f"chunk-{int(chunk)}.json", {"chunk": int(chunk), **payload})

    def chunks(self) -> list[dict[str, Any]]:
        """The chunk files' payloads, ordered by chunk."""
        out = []
        for name in self._names():
            if name.startswith("chunk-"):
                data = self._read(name)
                if data is not None:
                    out.append(data)
        return sorted(out, key=lambda d: int(d.get("chunk", 0)))

    def write_event(self, kind: str, key: str, payload: dict[str, Any]) -> bool:
        """Writes one event file (``schema_change``, ``capture_instance_switched``,
        ``data_skipped``); the same key overwrites, so a replayed batch writes it once."""
        safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in key)
        return self._write(f"event-{kind}-{safe}.json", {"kind": kind, "key": key, **payload})

    def _names(self) -> list[str]:
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(self.base, allow_not_found=True))
        except OSError as exc:
            log.warning("could not list metrics directory %s: %s", self.display, exc)
            return []
        return sorted(
            info.base_name
            for info in infos
            if info.type == pafs.FileType.File and info.base_name.endswith(".json")
        )

    def _read(self, name: str) -> dict[str, Any] | None:
        try:
            with self.fs.open_input_stream(f"{self.base}/{name}") as stream:
                data: dict[str, Any] = json.loads(stream.read())
                return data
        except (OSError, ValueError) as exc:
            log.warning("skipping unreadable metrics file %s/%s: %s", self.display, name, exc)
            return None

    def partitions(self) -> list[PartitionMetrics]:
        """One entry per ``(from_lsn, to_lsn)``: the latest attempt's file."""
        latest: dict[tuple[str, str], PartitionMetrics] = {}
        for name in self._names():
            if not name.startswith("part-"):
                continue
            data = self._read(name)
            if data is None:
                continue
            m = PartitionMetrics.from_json(data)
            key = (m.from_lsn, m.to_lsn)
            if key not in latest or m.written_at >= latest[key].written_at:
                latest[key] = m
        return sorted(latest.values(), key=lambda m: m.from_lsn)

    def events(self) -> list[dict[str, Any]]:
        """The event files' payloads (each with ``kind`` and ``key``)."""
        out = []
        for name in self._names():
            if name.startswith("event-"):
                data = self._read(name)
                if data is not None:
                    out.append(data)
        return out

    def clear(self) -> None:
        """Deletes every file (the sink does this before and after each batch)."""
        for name in self._names():
            try:
                self.fs.delete_file(f"{self.base}/{name}")
            except OSError as exc:
                log.warning("could not delete metrics file %s/%s: %s", self.display, name, exc)


def metrics_dir(path: str) -> MetricsDir:
    """Opens a metrics directory (see the module docstring).

    Raises:
        ValueError: ``path`` is empty, a ``dbfs:/`` URI, or a URI ``pyarrow.fs`` cannot open.
    """
    if not path:
        raise ValueError("metricsPath is empty; give a directory every node can write")
    if path.lower().startswith("dbfs:"):
        raise ValueError(
            f"metricsPath {path!r}: pyarrow.fs cannot open dbfs:/ URIs; use the FUSE path "
            "(/dbfs/...) or a Unity Catalog Volume (/Volumes/...)"
        )
    if "://" not in path:
        return MetricsDir(pafs.LocalFileSystem(), path, path)
    try:
        fs, base = pafs.FileSystem.from_uri(path)
    except (ValueError, OSError) as exc:
        raise ValueError(f"metricsPath {path!r} cannot be opened by pyarrow.fs: {exc}") from exc
    return MetricsDir(fs, base, path)
