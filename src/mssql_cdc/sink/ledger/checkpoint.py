"""What a stream's checkpoint records: Spark's offset and commit logs (the one reader of them)
and the generation file, with the generations it names (docs/generations.md; ADRs 0030, 0101).

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

A generation is one checkpoint and one sink id: generation 0 is the user's (``checkpoint``,
``app_id``); generation ``n`` > 0, opened by the ``n``-th re-snapshot, lives in
``<checkpoint>/_generations/<n>`` with sink id ``<app_id>.g<n>``. The live generation is
recorded in ``<checkpoint>/_mssql_cdc_generation.json`` (absent: generation 0), written
atomically (a temporary file, then ``os.replace``):

* ``generation``, ``snapshot_lsn``, ``commit_ts`` (the snapshot the generation started after),
  ``at`` (when it was recorded, UTC);
* ``recovering`` while a re-snapshot is under way: the generation it opens, where the stream
  was (``from_lsn``, ``from_ts``), the lost range's end (``lost_to_ts``) and, once recorded
  before the read, the snapshot's ``snapshot_lsn``/``commit_ts``: a rerun after a crash
  finishes the same recovery and reuses a snapshot already appended;
* ``failed_at``: when a re-snapshot failed (its own LSN was purged before the read ended);
  it counts toward ``resnapshot_interval_days`` like a re-snapshot.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from mssql_cdc.sink.ledger import ids

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "GENERATIONS_DIR",
    "STATE_FILE",
    "Generation",
    "GenerationState",
    "Generations",
    "Recovering",
    "batch_end",
    "clear_unfinished_log_writes",
    "generation_checkpoint",
    "last_committed_offset",
    "parse_offset_log",
    "read_state",
    "write_state",
]

log = logging.getLogger("mssql_cdc.sink")

#: the state file's name in the user's checkpoint
STATE_FILE = "_mssql_cdc_generation.json"
#: the directory of generations 1, 2, ... in the user's checkpoint
GENERATIONS_DIR = "_generations"


# -- Spark's offset log ----------------------------------------------------------------------


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


# -- the generation file ---------------------------------------------------------------------


@dataclass(frozen=True)
class Recovering:
    """A re-snapshot under way (see the module doc)."""

    generation: int
    from_lsn: str | None
    from_ts: str
    lost_to_ts: str
    snapshot_lsn: str | None = None
    commit_ts: str = ""


@dataclass(frozen=True)
class GenerationState:
    """The live generation and its snapshot (see the module doc); times are ISO-8601 UTC
    text, ``""`` when unknown."""

    generation: int = 0
    snapshot_lsn: str | None = None
    commit_ts: str = ""
    at: str = ""
    recovering: Recovering | None = None
    failed_at: str = ""

    def but(self, **changes: Any) -> GenerationState:  # noqa: ANN401 (dataclasses.replace)
        """A copy with ``changes``."""
        return replace(self, **changes)


def generation_checkpoint(checkpoint: str, generation: int) -> str:
    """The Spark checkpoint of ``generation``: the user's for 0."""
    if generation == 0:
        return checkpoint
    return os.path.join(checkpoint, GENERATIONS_DIR, str(generation))


def _state_path(checkpoint: str) -> str:
    return os.path.join(checkpoint, STATE_FILE)


def read_state(checkpoint: str) -> GenerationState:
    """The recorded state; generation 0 when there is no file (always for a URI checkpoint,
    which Python does not open).

    Raises:
        ValueError: the file is not a state this package wrote.
    """
    path = _state_path(checkpoint)
    if "://" in checkpoint or not os.path.isfile(path):
        return GenerationState()
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        recovering = data.pop("recovering", None)
        return GenerationState(
            **data, recovering=None if recovering is None else Recovering(**recovering)
        )
    except (ValueError, TypeError) as exc:
        raise ValueError(
            f"{path}: not a generation state mssql_cdc wrote ({exc}); restore it, or start a "
            "new checkpoint with a new app_id"
        ) from exc


def write_state(checkpoint: str, state: GenerationState) -> None:
    """Writes ``state`` atomically (temporary file in the same directory, then replace)."""
    os.makedirs(checkpoint, exist_ok=True)
    payload = asdict(state)
    if state.recovering is None:
        payload.pop("recovering")
    fd, temp = tempfile.mkstemp(prefix=".generation-", suffix=".tmp", dir=checkpoint)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(payload, handle, indent=1, sort_keys=True)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, _state_path(checkpoint))
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise


@dataclass(frozen=True)
class Generation:
    """Where the query runs: generation ``number``, its sink id and Spark checkpoint, and the
    ``startingLsn`` it must start at (its snapshot's LSN; ``None`` in generation 0)."""

    number: int
    sink_id: str
    checkpoint: str
    starting_lsn: str | None


class Generations:
    """The generations of the stream ``app_id`` in its (user's) ``checkpoint``: the state file
    read and written, and where each generation's Spark checkpoint is. Pure file I/O on the
    driver; building one reads nothing."""

    def __init__(self, checkpoint: str, app_id: str) -> None:
        self.checkpoint = checkpoint
        self.app_id = app_id

    def state(self) -> GenerationState:
        """The recorded state (see :func:`read_state`).

        Raises:
            ValueError: the file is not a state this package wrote.
        """
        return read_state(self.checkpoint)

    def of(self, state: GenerationState) -> Generation:
        """The generation ``state`` records as live: its number, sink id, checkpoint and
        (in a generation > 0) the snapshot LSN it starts at."""
        n = state.generation
        return Generation(
            n,
            ids.sink_id(self.app_id, n),
            generation_checkpoint(self.checkpoint, n),
            state.snapshot_lsn if n > 0 else None,
        )

    def live(self) -> Generation:
        """The generation the state file records (generation 0 without one)."""
        return self.of(self.state())

    def committed_offset(self, generation: Generation) -> dict[str, str] | None:
        """Where ``generation`` resumes: the offset of the newest batch Spark committed in its
        checkpoint (strict, :func:`last_committed_offset`); ``None`` when it committed none."""
        return last_committed_offset(generation.checkpoint)

    def clear_unfinished_log(self, generation: Generation) -> list[str]:
        """Removes what a driver killed while writing ``generation``'s first log entry left
        (:func:`clear_unfinished_log_writes`); returns the paths removed."""
        return clear_unfinished_log_writes(generation.checkpoint)

    def record(self, state: GenerationState) -> None:
        """Writes ``state`` (atomically): a recovery begun or positioned, a generation done, a
        failed attempt."""
        write_state(self.checkpoint, state)
