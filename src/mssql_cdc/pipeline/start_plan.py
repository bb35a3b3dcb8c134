"""``to_delta``'s arguments checked into a start plan, before anything is read or written.

Pure Python: no Spark, no server, no file. :func:`plan_start` raises every ``TypeError`` and
``ValueError`` a bad argument set gives, the first one in this order: the sink's identity
(``app_id``, ``target``, ``facts_table``, the facts table not the target by spelling), the
checkpoint path, ``query_name``, ``bootstrap``, the data-loss arguments (``on_data_loss``,
``resnapshot_interval_days``, ``snapshot_on_switch``, ``snapshot``), the trigger (and what
serverless compute runs), the checkpoint on Databricks, ``bootstrap`` with ``startingLsn``,
what ``on_data_loss="resnapshot"`` needs (facts, ``failOnDataLoss``, a local checkpoint),
what ``snapshot="chunked"`` needs (facts), then the ``metricsPath`` option (``dbfs:/``
refused) and ``snapshot_on_switch`` without a metrics directory. Where the code runs comes in
as a :class:`~mssql_cdc.pipeline.platform.Platform` (``detect_platform`` reads one Spark conf).
``pipeline.start.StreamStart`` runs the plan.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mssql_cdc.pipeline.arguments import (
    Recovery,
    check_recovery,
    check_trigger,
    path_argument,
    text_argument,
)
from mssql_cdc.pipeline.locations import check_checkpoint, is_uri, metrics_base
from mssql_cdc.sink import TableRef, WarmState, sink_arguments, warm_state_for

if TYPE_CHECKING:
    import os

    from mssql_cdc.options import ReaderOptions
    from mssql_cdc.pipeline.platform import Platform
    from mssql_cdc.types import OnDataLoss

__all__ = ["StartPlan", "ToDeltaArgs", "check_resnapshot", "plan_start"]


@dataclass(frozen=True)
class ToDeltaArgs:
    """``CdcStream.to_delta``'s arguments exactly as received (unchecked: a value may have
    another type than annotated)."""

    target: str
    app_id: str
    checkpoint: str | os.PathLike[str]
    facts_table: str | None = None
    trigger: Mapping[str, object] | None = None
    query_name: str | None = None
    bootstrap: bool = False
    on_data_loss: OnDataLoss = "fail"
    resnapshot_interval_days: float = 7.0
    snapshot_on_switch: bool = False
    snapshot: str = "full"


@dataclass(frozen=True)
class StartPlan:
    """A checked ``to_delta`` call: what to start and how.

    Attributes:
        checkpoint: the user's checkpoint location (generation 0's).
        query_name: the name asked for (``None``: the generation's sink id).
        trigger: the ``DataStreamWriter.trigger`` arguments (``None``: Spark's default).
        bootstrap: take or find the bootstrap snapshot; ``chunked``: only open a chunked one.
        options: the stream's data source options, ``metricsPath`` left out.
        metrics_base: the ``metricsPath`` option (an absolute local path or a URI), the base
            of the stream's metrics directory; ``None``: the default (the checkpoint's, with a
            facts table or ``snapshot_on_switch``).
    """

    target: TableRef
    app_id: str
    facts: TableRef | None
    checkpoint: str
    query_name: str | None
    trigger: dict[str, object] | None
    bootstrap: bool
    chunked: bool
    recovery: Recovery
    options: dict[str, str]
    metrics_base: str | None

    @property
    def warm_state(self) -> WarmState:
        """When the sink has Delta compute its tables' state ahead (ADRs 0177, 0180)."""
        return warm_state_for(self.trigger)


def check_resnapshot(checkpoint: str, facts: TableRef | None, parsed: ReaderOptions) -> None:
    """What ``on_data_loss="resnapshot"`` needs (a stream's, or a database stream's table's):
    a facts table, ``failOnDataLoss=true``, and a checkpoint Python reads where Spark writes.

    Raises:
        ValueError: naming what is missing and the fix.
    """
    what = "on_data_loss='resnapshot'"
    if facts is None:
        raise ValueError(
            f"{what} needs facts_table: the resnapshot facts row records the lost range "
            "and the generation"
        )
    if not parsed.fail_on_data_loss:
        raise ValueError(
            f"{what} needs failOnDataLoss=true: with false a purge is skipped during a "
            "batch and the gap hidden, so no re-snapshot would ever cover it"
        )
    if is_uri(checkpoint) or checkpoint == "/dbfs" or checkpoint.startswith("/dbfs/"):
        raise ValueError(
            f"{what} keeps its generation state in the checkpoint, which Python must read "
            f"where Spark writes it: {checkpoint!r} is a URI or a /dbfs path; use a local "
            "path or a Unity Catalog Volume (/Volumes/<catalog>/<schema>/<volume>/...)"
        )


def plan_start(
    args: ToDeltaArgs, options: Mapping[str, str], parsed: ReaderOptions, platform: Platform
) -> StartPlan:
    """Checks ``args`` (see the module doc for the order) against the stream's data source
    ``options`` (documented spellings, string values), their parsed form and ``platform``.

    Raises:
        TypeError: an argument has the wrong type (the message names it).
        ValueError: an argument, or a combination, that ``to_delta`` refuses (the message
            names it and the fix).
    """
    target, app_id, facts = sink_arguments(args.target, args.app_id, args.facts_table)
    checkpoint = path_argument("checkpoint", args.checkpoint)
    query_name = text_argument("query_name", args.query_name, optional=True)
    if not isinstance(args.bootstrap, bool):
        raise TypeError(f"bootstrap must be True or False, got {type(args.bootstrap).__name__}")
    recovery = check_recovery(
        args.on_data_loss, args.resnapshot_interval_days, args.snapshot_on_switch, args.snapshot
    )
    trigger = check_trigger(args.trigger, serverless=platform.serverless)
    check_checkpoint(checkpoint, databricks=platform.databricks)
    chosen = dict(options)
    if args.bootstrap and "startingLsn" in chosen:
        raise ValueError(
            "bootstrap=True sets startingLsn itself (to the snapshot's LSN): remove the "
            "startingLsn option, or pass bootstrap=False"
        )
    if recovery.resnapshot:
        check_resnapshot(checkpoint, facts, parsed)
    chunked = args.bootstrap and recovery.snapshot == "chunked"
    if chunked and facts is None:
        raise ValueError(
            "snapshot='chunked' needs facts_table: the snapshot_open, snapshot_plan and "
            "snapshot_chunk facts rows are how backfill() resumes exactly where it stopped"
        )
    base = metrics_base(chosen.pop("metricsPath", None))
    if recovery.snapshot_on_switch and base is None and is_uri(checkpoint):
        raise ValueError(
            "snapshot_on_switch=True learns of a capture-instance switch from the reader's "
            f"metrics files, and the checkpoint {checkpoint!r} is a URI: set the metricsPath "
            "option to a directory every node can write (a Volume, or a URI pyarrow.fs "
            "opens), or use a local or Volume checkpoint"
        )
    return StartPlan(
        target,
        app_id,
        facts,
        checkpoint,
        query_name,
        trigger,
        args.bootstrap,
        chunked,
        recovery,
        chosen,
        base,
    )
