"""The rewind rule: is a micro-batch new, a replay to skip, or a rewound checkpoint?

Pure Python, run on the driver by the sink before it writes a batch (ADR 0010). The inputs are
what the tables already record for the sink's ``app_id``:

* ``facts_last``: the largest ``batch_id`` of the app_id's micro-batch rows in the facts table;
* ``facts_txn``: Delta's ``txnVersion`` for ``<app_id>#facts`` on the facts table;
* ``target_txn``: Delta's ``txnVersion`` for ``app_id`` on the target;

each ``-1`` when nothing is recorded and ``None`` when it cannot be read. With
``last = max(facts_last, facts_txn)``, a batch ``b`` is

* **new** when ``b > last`` and the target holds no later batch (``target_txn <= b``; equal is
  the replay of a batch whose bronze commit landed and whose facts commit did not: Delta skips
  the bronze append and the facts row is written);
* **a replay** when ``b == last`` (the process died after the facts commit, before Spark's
  commit log entry): nothing is written, provided the replayed batch ends where the recorded
  one did and holds no more rows (see :func:`check_replay`; ADR 0030);
* **a rewind** otherwise (``b < last``, or ``target_txn > b``): a ``ValueError``.

An app_id writes to one target (ADR 0031): :func:`other_target` is the error when the facts
table records it for another one.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["Recorded", "Verdict", "check_replay", "classify", "other_target"]


class Verdict(enum.Enum):
    """What the sink does with a batch."""

    NEW = "new"
    REPLAY = "replay"


@dataclass(frozen=True)
class Recorded:
    """What the facts table and Delta's logs hold for one ``app_id`` (see the module doc).

    ``last_max_lsn``/``last_end_lsn``/``last_rows`` are those of the facts row of
    ``facts_last`` (``last_end_lsn`` is the batch's end offset, known for empty batches too).
    """

    facts_last: int = -1
    facts_txn: int | None = -1
    target_txn: int | None = -1
    last_max_lsn: str | None = None
    last_end_lsn: str | None = None
    last_rows: int | None = None

    @property
    def last(self) -> int:
        """The last batch the facts table records for the app_id (``-1``: none)."""
        return max(self.facts_last, -1 if self.facts_txn is None else self.facts_txn)


def _rewound(app_id: str, batch_id: int, where: str, last: int) -> ValueError:
    return ValueError(
        f"delta_sink app_id {app_id!r}: micro-batch {batch_id} is not after batch {last}, "
        f"already recorded for this app_id in {where}: the checkpoint was deleted or rewound "
        "under the same app_id, and Delta would silently skip its batches as already written. "
        "Give a new checkpoint a new app_id (or restore the checkpoint that goes with this one)."
    )


def classify(
    app_id: str, batch_id: int, recorded: Recorded, *, target: str, facts_table: str
) -> Verdict:
    """Applies the rule of the module doc.

    Raises:
        ValueError: the batch is a rewind; the message names the app_id, the batch, the last
            recorded batch and the table that records it.
    """
    last = recorded.last
    if batch_id < last:
        raise _rewound(app_id, batch_id, f"the facts table {facts_table}", last)
    if recorded.target_txn is not None and recorded.target_txn > batch_id:
        raise _rewound(app_id, batch_id, f"the target {target}", recorded.target_txn)
    if batch_id == last:
        return Verdict.REPLAY
    return Verdict.NEW


def check_replay(
    app_id: str,
    batch_id: int,
    recorded: Recorded,
    *,
    max_lsn: str | None,
    end_lsn: str | None,
    rows: int,
    facts_table: str,
) -> None:
    """Checks that a batch classified as a replay ends where the recorded one did.

    A true replay reuses Spark's offset log entry, so its end offset (``end_lsn``, from the
    offset log or the metrics files) and its largest commit LSN are the recorded ones, and it
    cannot hold more rows (a range purged by CDC cleanup between the two attempts can only
    lower the count). A new checkpoint whose first batch id happens to equal the last recorded
    one reads another range. Values unknown on either side are not compared.

    Raises:
        ValueError: the ends differ or the batch holds more rows: the checkpoint was rewound
            or replaced.
    """
    pairs = [
        ("end LSN", recorded.last_end_lsn, end_lsn),
        ("max LSN", recorded.last_max_lsn, max_lsn),
    ]
    found = [
        f"another {what} ({now}, recorded {before})"
        for what, before, now in pairs
        if before is not None and now is not None and before != now
    ]
    if recorded.last_rows is not None and rows > recorded.last_rows:
        found.append(f"more rows ({rows}, recorded {recorded.last_rows})")
    if found:
        raise ValueError(
            f"delta_sink app_id {app_id!r}: micro-batch {batch_id} has the id of the last "
            f"batch recorded in {facts_table} but {found[0]}: it is not a replay, the "
            "checkpoint was deleted or rewound under the same app_id. Give a new checkpoint a "
            "new app_id."
        )


def other_target(app_id: str, recorded: str, target: str, facts_table: str) -> ValueError:
    """The error for an app_id pointed at ``target`` while ``facts_table`` records it writing
    to ``recorded``, another table."""
    return ValueError(
        f"delta_sink app_id {app_id!r} writes to {recorded} (recorded in {facts_table}), not "
        f"{target}: an app_id belongs to one target, and its history would be split over two "
        f"tables. To write to {target}, give it a new app_id and a new checkpoint; to go on, "
        f"point the stream back at {recorded}."
    )
