"""Every Delta ``txnAppId`` this project writes, named in one place (ADR 0073).

Pure, no Spark. A stream's ``app_id`` is the sink's identity; each kind of commit it makes
carries its own ``txnAppId`` derived from it, so Delta's ``SetTransaction`` keeps one version
per kind and a replay of any commit is skipped by Delta:

* :func:`bronze_app_id` (``<app_id>``): micro-batch appends to bronze, ``txnVersion`` the batch
  id;
* :func:`facts_app_id` (``<app_id>#facts``): each micro-batch's facts commit, ``txnVersion``
  the batch id;
* :func:`events_app_id` (``<app_id>#events``): the snapshot appends to bronze and their
  ``bootstrap``/``resnapshot`` facts rows: ``txnVersion`` 0 for the bootstrap snapshot (or the
  seed), :func:`resnapshot_version` (the generation ``n``) for the re-snapshot that opens
  generation ``n``, :data:`MANUAL_SNAPSHOT_APP_ID` for ``snapshot()`` without an app_id;
* :func:`switch_app_id` (``<app_id>#switch``): with ``snapshot_on_switch``, the snapshot
  appended after the micro-batch that switched to a newer capture instance, ``txnVersion`` that
  batch's id;
* :func:`generation_app_id` (``<app_id>.g<n>``): the sink id of generation ``n`` > 0 (its
  micro-batches use the three ids above derived from it).

``snapshot_open`` facts rows of a full snapshot carry no ``txnAppId`` (each run that reads the
table writes one). A chunked snapshot (docs/bootstrap.md#chunked-snapshots-and-backfill) opened
at LSN ``S`` writes:

* :func:`snapshots_app_id` (``<app_id>#snapshots``): its ``snapshot_open`` facts row,
  ``txnVersion`` the generation (once per generation);
* :func:`snapshot_plan_app_id` (``<app_id>#snapplan.<S>``): its ``snapshot_plan`` facts row,
  ``txnVersion`` 0 (the plan is written once);
* :func:`snapshot_chunks_app_id` (``<app_id>#snapchunks.<S>``): each wave's bronze append and
  its ``snapshot_chunk`` facts rows, ``txnVersion`` the wave's last chunk number (chunks land
  in plan order, so the version says which chunks landed).
"""

from __future__ import annotations

import re

__all__ = [
    "BOOTSTRAP_VERSION",
    "MANUAL_SNAPSHOT_APP_ID",
    "bronze_app_id",
    "events_app_id",
    "facts_app_id",
    "generation_app_id",
    "generations_regex",
    "of_stream",
    "resnapshot_version",
    "snapshot_chunks_app_id",
    "snapshot_plan_app_id",
    "snapshots_app_id",
    "stream_app_id",
    "switch_app_id",
]

#: ``txnVersion`` of the bootstrap snapshot's commits (one snapshot per app_id)
BOOTSTRAP_VERSION = 0

#: ``txnAppId`` of a ``snapshot()`` taken without an app_id (``txnVersion`` the number of
#: such snapshots already in the target: each call that reads appends once)
MANUAL_SNAPSHOT_APP_ID = "mssql_cdc#snapshot"


def bronze_app_id(app_id: str) -> str:
    """``txnAppId`` of a stream's micro-batch appends to bronze: the app_id itself."""
    return app_id


def facts_app_id(app_id: str) -> str:
    """``txnAppId`` of a stream's micro-batch facts commits."""
    return f"{app_id}#facts"


def events_app_id(app_id: str) -> str:
    """``txnAppId`` of a stream's snapshot commits (target and facts)."""
    return f"{app_id}#events"


def switch_app_id(app_id: str) -> str:
    """``txnAppId`` of the snapshots ``snapshot_on_switch`` appends to bronze (``txnVersion``
    the id of the micro-batch that switched capture instance)."""
    return f"{app_id}#switch"


def generation_app_id(app_id: str, generation: int) -> str:
    """The sink id of ``generation``: ``app_id`` for 0, ``<app_id>.g<n>`` after."""
    return app_id if generation == 0 else f"{app_id}.g{generation}"


def of_stream(app_id: str, sink_id: str) -> bool:
    """Whether ``sink_id`` (a facts row's ``app_id``) is the stream ``app_id``'s: the id itself
    or one of its generations ``<app_id>.g<n>`` (:func:`generations_regex` in Spark)."""
    if sink_id == app_id:
        return True
    head, _, number = sink_id.rpartition(".g")
    return head == app_id and number.isascii() and number.isdigit()


def generations_regex(app_id: str) -> str:
    """The regular expression (Java's, for Spark's ``rlike``) of the sink ids of ``app_id``'s
    generations ``<app_id>.g<n>``: :func:`of_stream` without the id itself."""
    return "^" + re.escape(app_id) + r"\.g[0-9]+$"


def stream_app_id(sink_id: str, generation: int) -> str:
    """The stream's app_id a sink id of ``generation`` belongs to (the inverse of
    :func:`generation_app_id`): ``<app_id>.g<n>`` less its suffix, ``sink_id`` for 0."""
    return sink_id.removesuffix(f".g{generation}") if generation > 0 else sink_id


def resnapshot_version(generation: int) -> int:
    """``txnVersion`` (under :func:`events_app_id` of the user's app_id) of the re-snapshot
    that opens ``generation`` (>= 1): the generation itself, above the bootstrap's 0."""
    if generation < 1:
        raise ValueError(f"a re-snapshot opens generation 1 or later, got {generation}")
    return generation


def snapshots_app_id(app_id: str) -> str:
    """``txnAppId`` of a chunked snapshot's ``snapshot_open`` facts row (version: generation)."""
    return f"{app_id}#snapshots"


def snapshot_plan_app_id(app_id: str, snapshot_lsn: str) -> str:
    """``txnAppId`` of the ``snapshot_plan`` facts row of the chunked snapshot at
    ``snapshot_lsn`` (version 0)."""
    return f"{app_id}#snapplan.{snapshot_lsn}"


def snapshot_chunks_app_id(app_id: str, snapshot_lsn: str) -> str:
    """``txnAppId`` of the chunk appends to bronze and their ``snapshot_chunk`` facts rows of
    the chunked snapshot at ``snapshot_lsn`` (version: the wave's last chunk number)."""
    return f"{app_id}#snapchunks.{snapshot_lsn}"
