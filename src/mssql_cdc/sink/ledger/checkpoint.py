"""What Spark's checkpoint records: its offset and commit logs, read here and nowhere else
(docs/generations.md; ADR 0030). The generation file beside them is ``generations.py``'s.

Runs on the driver (the offset log of a batch also in Spark Connect's ``foreachBatch``
worker). Spark writes ``<checkpoint>/offsets/<batch_id>`` before it runs a batch (a replay
reuses the entry) and ``commits/<batch_id>`` after the batch's ``foreachBatch`` returned. An
offset log entry is text: a version line (``v1``), one line of batch metadata (JSON), then one
line per source holding its offset as JSON, here ``{"lsn": "0x...", "commit_ts": "..."}``
(:func:`parse_offset_log`). It is read with two policies:

* tolerant, for a batch's end offset (the sink's replay evidence, :func:`batch_end`): through
  Hadoop's ``FileSystem`` on classic Spark (whatever the scheme), else ``pyarrow.fs``; anything
  odd is ``None`` and the metrics files decide;
* strict, for where a generation resumes (:func:`last_committed_offset`): local files only, and
  an entry that is not one this version reads is a ``ValueError``.

:func:`seed_committed_batch` writes a new local checkpoint in which one batch is committed, so
that a query started on it goes on from that batch's end offset with the next batch id: how a
table's stream can move to a checkpoint of its own without reloading (measured on Spark 4.0,
4.1 and 4.2, ``tests/sink/test_seeded_checkpoint.py``).
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
import uuid
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "batch_end",
    "clear_unfinished_log_writes",
    "last_committed_offset",
    "newest_committed",
    "newest_conf",
    "parse_offset_log",
    "seed_committed_batch",
    "write_whole",
]

log = logging.getLogger("mssql_cdc.sink")


def parse_offset_log(text: str) -> dict[str, str] | None:
    """The ``{"lsn", "commit_ts"}`` source offset of an offset log entry (tolerant); ``None``
    when the entry is not version ``v1`` or holds no (or more than one) offset with an
    ``lsn``."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "v1":
        return None
    found = []
    for line in lines[2:]:
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and isinstance(value.get("lsn"), str):
            found.append({"lsn": value["lsn"], "commit_ts": str(value.get("commit_ts") or "")})
    return found[0] if len(found) == 1 else None


def _read_hadoop(spark: SparkSession, location: str) -> str | None:
    jvm = getattr(spark, "_jvm", None)
    jsession = getattr(spark, "_jsparkSession", None)
    if jvm is None or jsession is None:
        raise NotImplementedError
    path = jvm.org.apache.hadoop.fs.Path(location)
    fs = path.getFileSystem(jsession.sessionState().newHadoopConf())
    if not fs.exists(path):
        return None
    stream = fs.open(path)
    try:
        return str(jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
    finally:
        stream.close()


def _read_arrow(location: str) -> str | None:
    from mssql_cdc._metrics import metrics_dir

    opened = metrics_dir(location if "://" in location else os.path.abspath(location))
    try:
        with opened.fs.open_input_stream(opened.base) as stream:
            return bytes(stream.read()).decode("utf-8")
    except FileNotFoundError:
        return None


def batch_end(spark: SparkSession, checkpoint: str, batch_id: int) -> dict[str, str] | None:
    """The end offset of ``batch_id`` recorded in the checkpoint's offset log, or ``None``
    (tolerant: an entry that cannot be read or parsed is ``None``)."""
    location = f"{checkpoint.rstrip('/')}/offsets/{int(batch_id)}"
    try:
        try:
            text = _read_hadoop(spark, location)
        except NotImplementedError:
            text = _read_arrow(location)
    except Exception as exc:  # no offset: the metrics decide
        log.debug("could not read the offset log entry %s: %s", location, exc)
        return None
    return None if text is None else parse_offset_log(text)


def _batches(directory: str) -> list[int]:
    if not os.path.isdir(directory):
        return []
    return sorted(int(name) for name in os.listdir(directory) if name.isdigit())


def last_committed_offset(checkpoint: str) -> dict[str, str] | None:
    """The source offset (``{"lsn", "commit_ts"}``) of the newest batch Spark committed in the
    local ``checkpoint`` (strict); ``None`` when it committed none.

    Raises:
        ValueError: the offset log is not format ``v1`` or holds no offset of this source.
    """
    committed = _batches(os.path.join(checkpoint, "commits"))
    if not committed:
        return None
    path = os.path.join(checkpoint, "offsets", str(committed[-1]))
    with open(path, encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    if not lines or lines[0] != "v1" or len(lines) < 3:
        raise ValueError(
            f"{path}: Spark's offset log is not format v1 with a source offset; this version "
            "of mssql_cdc reads only v1"
        )
    offset = json.loads(lines[2])
    if not isinstance(offset, dict) or not isinstance(offset.get("lsn"), str):
        raise ValueError(f"{path}: holds {lines[2]!r}, not an offset of the mssql_cdc source")
    return {"lsn": offset["lsn"], "commit_ts": str(offset.get("commit_ts") or "")}


#: the temporary file Spark's checkpoint file manager writes a log entry to before renaming it
#: into place (``.<batch>.<uuid>.tmp``), and Hadoop's checksum of it (``..<batch>.<uuid>.tmp.crc``)
_LOG_TEMP = re.compile(r"^\.\.?[0-9]+\.[0-9A-Fa-f-]{36}\.tmp(\.crc)?$")


def clear_unfinished_log_writes(checkpoint: str) -> list[str]:
    """Removes the temporary files of a log entry a killed driver did not finish from the
    offset and commit logs of a local ``checkpoint`` that holds no entry yet; returns their
    paths (none for a URI checkpoint, which Python does not open).

    A driver killed while writing the first offset-log entry leaves only its temporary file
    in ``offsets/``; the entry never became visible (it is renamed into place when complete),
    so nothing is lost by removing it. Without that, Spark 4 refuses to start the query for
    good: it plans batch 0 and finds ``offsets/`` not empty
    (``STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY``). A log that holds an entry is left as it
    is.
    """
    if "://" in checkpoint:
        return []
    removed = []
    for log_name in ("offsets", "commits"):
        directory = os.path.join(checkpoint, log_name)
        if not os.path.isdir(directory) or _batches(directory):
            continue
        for name in sorted(os.listdir(directory)):
            if _LOG_TEMP.match(name):
                path = os.path.join(directory, name)
                os.unlink(path)
                removed.append(path)
    return removed


def seed_committed_batch(
    checkpoint: str, batch_id: int, offset: dict[str, str], conf: dict[str, str]
) -> None:
    """Writes a new local Spark checkpoint in which micro-batch ``batch_id`` ended at
    ``offset`` (``{"lsn", "commit_ts"}``) and is committed; a query started on it runs batch
    ``batch_id + 1`` from that offset, and its sink finds the batch ids going on from the ones
    its facts table records.

    Spark, resuming, reads the newest offset log entry and the one before it (the committed
    offsets of the newest batch's start), and the commit log's newest entry: so it writes
    ``offsets/<batch_id - 1>`` (the same offset; only for ``batch_id > 0``), then
    ``offsets/<batch_id>``, then ``commits/<batch_id>``, and ``metadata`` (a new query id)
    first, each with :func:`write_whole`. ``conf``
    is the batch metadata's SQL settings, copied from an entry Spark wrote for a query of the
    same session (Spark fills the settings an entry lacks with their oldest defaults). Driver.

    Raises:
        ValueError: ``checkpoint`` is a URI, or exists and is not empty, or ``batch_id`` is
            negative, or ``offset`` has no ``lsn``.
    """
    if "://" in checkpoint:
        raise ValueError(f"checkpoint {checkpoint!r}: only a local checkpoint can be seeded")
    if os.path.isdir(checkpoint) and os.listdir(checkpoint):
        raise ValueError(f"checkpoint {checkpoint!r} is not empty: seed only a new checkpoint")
    if batch_id < 0:
        raise ValueError(f"batch_id {batch_id} is negative")
    if not isinstance(offset.get("lsn"), str):
        raise ValueError(f"offset {offset!r} has no lsn")
    source = json.dumps({"lsn": offset["lsn"], "commit_ts": offset.get("commit_ts", "")})
    metadata = json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": 0, "conf": dict(conf)})
    entry = f"v1\n{metadata}\n{source}"
    files = [("metadata", json.dumps({"id": str(uuid.uuid4())}))]
    for batch in ([batch_id - 1] if batch_id > 0 else []) + [batch_id]:
        files.append((os.path.join("offsets", str(batch)), entry))
    files.append((os.path.join("commits", str(batch_id)), 'v1\n{"nextBatchWatermarkMs":0}'))
    for name, text in files:  # in this order: the commit entry last
        write_whole(os.path.join(checkpoint, name), text, temporary_prefix=".seeding-")


def newest_committed(checkpoint: str) -> int:
    """The newest batch id of the local ``checkpoint``'s commit log (``-1``: none)."""
    committed = _batches(os.path.join(checkpoint, "commits"))
    return committed[-1] if committed else -1


def newest_conf(checkpoint: str) -> dict[str, str]:
    """The SQL settings (``conf``) of the newest offset log entry Spark wrote in the local
    ``checkpoint``: what :func:`seed_committed_batch` copies into a new checkpoint.

    Raises:
        ValueError: the checkpoint has no offset log entry, or its newest is unreadable.
    """
    logged = _batches(os.path.join(checkpoint, "offsets"))
    if not logged:
        raise ValueError(f"checkpoint {checkpoint!r} has no offset log entry")
    path = os.path.join(checkpoint, "offsets", str(logged[-1]))
    with open(path, encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    try:
        conf = json.loads(lines[1])["conf"]
    except (IndexError, KeyError, TypeError, ValueError):
        raise ValueError(f"{path}: not an offset log entry Spark wrote") from None
    if not isinstance(conf, dict):
        raise ValueError(f"{path}: not an offset log entry Spark wrote")
    return {str(k): str(v) for k, v in conf.items()}


def write_whole(path: str, text: str, *, temporary_prefix: str) -> None:
    """Writes ``text`` to ``path`` atomically: a temporary file named ``temporary_prefix...tmp``
    in the same directory (created when missing), flushed to disk, then renamed over ``path``;
    the temporary file is removed when anything fails. The checkpoint's own files (the seeded
    log entries, the generation file) are written this way and nowhere else."""
    directory = os.path.dirname(path) or "."
    os.makedirs(directory, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=temporary_prefix, suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise
