"""The end offset of a micro-batch, read from Spark's offset log in the checkpoint (ADR 0030).

Spark writes ``<checkpoint>/offsets/<batch_id>`` before it runs batch ``batch_id``, and a batch
replayed after a crash reuses that entry, so it is what tells a replay (the same end) from
another range under the same batch id, even for a batch that read nothing and ran no partition.
The file is text: a version line (``v1``), one line of batch metadata (JSON), then one line per
source holding the source's offset as JSON, here ``{"lsn": "0x...", "commit_ts": "..."}``.

Runs on the driver. On classic Spark the file is read through Hadoop's ``FileSystem`` (the one
Spark wrote it with, whatever the scheme); elsewhere (Spark Connect) through ``pyarrow.fs``
(local and FUSE paths, URIs it opens). Anything unreadable is ``None``: the caller falls back to
what the metrics files say.
"""

from __future__ import annotations

import json
import logging
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["batch_end", "parse_offset_log"]

log = logging.getLogger("mssql_cdc.sink")


def parse_offset_log(text: str) -> dict[str, str] | None:
    """The ``{"lsn", "commit_ts"}`` source offset of an offset log entry; ``None`` when the
    entry is not version ``v1`` or holds no (or more than one) offset with an ``lsn``."""
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
    """The end offset of ``batch_id`` recorded in the checkpoint's offset log, or ``None``."""
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
