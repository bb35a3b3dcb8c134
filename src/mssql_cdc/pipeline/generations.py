"""Generations: where a stream that re-snapshotted after data loss keeps its files
(docs/generations.md; ADR 0101).

Pure Python, no Spark, run on the driver by ``to_delta`` before the query starts. A generation
is one checkpoint and one sink id: generation 0 is the user's (``checkpoint``, ``app_id``);
generation ``n`` > 0, opened by the ``n``-th re-snapshot, lives in
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

:func:`last_committed_offset` reads Spark's offset log (``offsets/<batch>``, format ``v1``)
for the batch ``commits/`` records last: the position the stream resumes after.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import asdict, dataclass, replace
from typing import Any

__all__ = [
    "GENERATIONS_DIR",
    "STATE_FILE",
    "GenerationState",
    "Recovering",
    "clear_unfinished_log_writes",
    "generation_checkpoint",
    "last_committed_offset",
    "read_state",
    "write_state",
]

#: the state file's name in the user's checkpoint
STATE_FILE = "_mssql_cdc_generation.json"
#: the directory of generations 1, 2, ... in the user's checkpoint
GENERATIONS_DIR = "_generations"


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


def _batches(directory: str) -> list[int]:
    if not os.path.isdir(directory):
        return []
    return sorted(int(name) for name in os.listdir(directory) if name.isdigit())


def last_committed_offset(checkpoint: str) -> dict[str, str] | None:
    """The source offset (``{"lsn", "commit_ts"}``) of the newest batch Spark committed in
    ``checkpoint``; ``None`` when it committed none.

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
