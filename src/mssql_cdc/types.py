"""Types of the public API (docs/reference/api.md): plain typing, no Spark.

* :class:`Offset`: a position in the change history, what ``snapshot()``, ``seed()`` and
  :func:`mssql_cdc.newest_snapshot` return and ``startingLsn`` takes (its ``lsn``);
* :data:`OnDataLoss`: the values of ``to_delta(on_data_loss=...)``.
"""

from __future__ import annotations

from typing import Literal, TypedDict

__all__ = ["ON_DATA_LOSS", "Offset", "OnDataLoss"]


class Offset(TypedDict):
    """A position: ``lsn`` (``0x`` and 20 upper-case hex digits, the commit taken as
    processed) and ``commit_ts`` (its commit time, UTC ISO-8601 to the millisecond, ``Z``;
    ``""`` when no commit has that LSN)."""

    lsn: str
    commit_ts: str


#: what ``to_delta`` does when changes it needs were purged before the query started
OnDataLoss = Literal["fail", "resnapshot"]

#: the values of :data:`OnDataLoss`, in documentation order
ON_DATA_LOSS: tuple[OnDataLoss, ...] = ("fail", "resnapshot")
