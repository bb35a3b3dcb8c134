"""A stream's generations and the file that records the live one (docs/generations.md;
ADR 0101). Pure file I/O on the driver.

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
import os
from dataclasses import asdict, dataclass, replace
from typing import Any

from mssql_cdc.sink.ledger import ids
from mssql_cdc.sink.ledger.checkpoint import (
    clear_unfinished_log_writes,
    last_committed_offset,
    write_whole,
)

__all__ = [
    "GENERATIONS_DIR",
    "STATE_FILE",
    "Generation",
    "GenerationState",
    "Generations",
    "Recovering",
    "generation_checkpoint",
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
    payload = asdict(state)
    if state.recovering is None:
        payload.pop("recovering")
    text = json.dumps(payload, indent=1, sort_keys=True)
    write_whole(_state_path(checkpoint), text, temporary_prefix=".generation-")


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
