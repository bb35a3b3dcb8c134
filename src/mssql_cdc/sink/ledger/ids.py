"""Every Delta ``txnAppId`` this project writes and every ``txnVersion`` rule, in one place: the
only module that builds a :class:`~mssql_cdc.sink.tables.Txn`.

Pure, no Spark; runs wherever it is called (driver, or the ``foreachBatch`` worker of Spark
Connect). A stream's ``app_id`` is its identity; each kind of commit carries its own
``txnAppId`` derived from it, so Delta's ``SetTransaction`` keeps one version per kind and a
replay of any commit is skipped by Delta (Delta skips a commit whose version is not above the
one recorded for its id). The spellings are part of every existing table and checkpoint: they
never change.

A generation's *sink id* is ``app_id`` for generation 0 and ``<app_id>.g<n>`` after
(:func:`sink_id`); the micro-batch ids derive from the sink id, the snapshot ids of a stream
from the user's ``app_id`` unless noted. ``S`` is a snapshot's LSN.

* micro-batch rows (bronze): ``<sink>``, the batch id (:func:`micro_batch`);
* micro-batch facts: ``<sink>#facts``, the batch id (:func:`batch_facts`);
* bootstrap (or seed) rows and their ``bootstrap`` row: ``<app_id>#events``, 0
  (:func:`bootstrap`);
* a re-snapshot's rows and its ``resnapshot`` row: ``<app_id>#events``, the generation
  ``n`` >= 1 it opens (:func:`resnapshot`);
* ``snapshot()`` and ``seed()`` rows: ``<app_id>#events``, or ``mssql_cdc#snapshot`` without an
  app_id, the recorded version + 1 (:func:`next_owned`);
* switch snapshot rows: ``<sink>#switch``, the switching batch's id (:func:`switch`);
* a chunked snapshot's ``snapshot_open`` row: ``<app_id>#snapshots``, the generation
  (:func:`chunked_open`);
* its ``snapshot_plan`` row: ``<sink>#snapplan.<S>``, 0 (:func:`chunk_plan`);
* each wave's bronze rows: ``<sink>#snapchunks.<S>``, the wave's first chunk number
  (:func:`chunk_wave`); the ``snapshot_chunk`` rows of a run of chunks: the same id on the facts
  table, the run's first chunk number (:func:`chunk_facts`). Keyed by the first chunk, a wave
  (or a run of facts rows) lands only right after the last one (ADR 0200).

A full snapshot's ``snapshot_open`` row carries no transaction (each run that reads the table
writes one).

A database stream (``D`` its own app_id) writes each table's micro-batches under the table's
ids above, and two commits of its own on the facts table:

* the tables that join or leave it, before a batch's first table commit: ``<D>#members``, the
  database batch id (:func:`database_members`);
* the facts rows of the batch, after its tables' bronze commits (each table's micro-batch
  row, the heartbeat rows of idle tables, the parked tables' events): ``<D>#database``, the
  database batch id (:func:`database_facts`).
"""

from __future__ import annotations

import re

from mssql_cdc.sink.tables import Txn

__all__ = [
    "ANONYMOUS_OWNER",
    "BOOTSTRAP_VERSION",
    "GENERATION_SUFFIX",
    "batch_facts",
    "belongs",
    "bootstrap",
    "bronze_id",
    "chunk_facts",
    "chunk_plan",
    "chunk_wave",
    "chunk_wave_id",
    "chunked_open",
    "database_facts",
    "database_facts_id",
    "database_members",
    "events_id",
    "facts_id",
    "generations_prefix",
    "generations_regex",
    "micro_batch",
    "next_generation",
    "next_owned",
    "owned_id",
    "owner",
    "resnapshot",
    "resnapshot_generation",
    "sink_id",
    "stream_of",
    "stream_of_sink",
    "switch",
    "switch_id",
]

#: ``txnVersion`` of the bootstrap snapshot's commits (one snapshot per app_id)
BOOTSTRAP_VERSION = 0

#: the owner of a ``snapshot()`` or ``seed()`` taken without an app_id: its ``txnAppId``
#: (``txnVersion`` the number of such snapshots already in the target)
ANONYMOUS_OWNER = "mssql_cdc#snapshot"


# -- sink ids of generations -----------------------------------------------------------------


def sink_id(app_id: str, generation: int) -> str:
    """The sink id of ``generation``: ``app_id`` for 0, ``<app_id>.g<n>`` after."""
    return app_id if generation == 0 else f"{app_id}.g{generation}"


def stream_of(sink: str, generation: int) -> str:
    """The stream's app_id a sink id of ``generation`` belongs to (the inverse of
    :func:`sink_id`): ``<app_id>.g<n>`` less its suffix, ``sink`` for 0."""
    return sink.removesuffix(f".g{generation}") if generation > 0 else sink


def stream_of_sink(sink: str) -> str:
    """The stream a facts row's ``app_id`` belongs to when its generation is not known: a
    trailing ``.g<digits>`` removed (``orders.g2`` -> ``orders``), any other id as it is: the
    ``app_id`` that :func:`belongs` says ``sink`` is a generation of."""
    head, dot, tail = sink.rpartition(".g")
    return head if dot and head and tail.isascii() and tail.isdigit() else sink


def belongs(app_id: str, sink: str) -> bool:
    """Whether ``sink`` (a facts row's ``app_id``) is the stream ``app_id``'s: the id itself
    or one of its generations ``<app_id>.g<n>`` (:func:`generations_regex` in Spark)."""
    if sink == app_id:
        return True
    head, _, number = sink.rpartition(".g")
    return head == app_id and number.isascii() and number.isdigit()


def generations_regex(app_id: str) -> str:
    """The regular expression (Java's, for Spark's ``rlike``) of the sink ids of ``app_id``'s
    generations ``<app_id>.g<n>``: :func:`belongs` without the id itself."""
    return "^" + re.escape(app_id) + r"\.g[0-9]+$"


def generations_prefix(app_id: str) -> str:
    """What every sink id of ``app_id``'s generations ``n`` >= 1 starts with (``<app_id>.g``):
    a filter Delta's file statistics can skip by, before :func:`generations_regex`."""
    return app_id + ".g"


#: a sink id's generation suffix (``.g<n>``), as a Java regular expression: Spark's
#: ``regexp_replace(app_id, GENERATION_SUFFIX, '')`` is :func:`stream_of_sink`
GENERATION_SUFFIX = r"[.]g[0-9]+$"


def next_generation(state_generation: int, events_version: int) -> int:
    """The generation a re-snapshot after data loss opens: one above both the live generation
    and the highest re-snapshot version bronze records under ``<app_id>#events``."""
    return max(state_generation, events_version) + 1


def resnapshot_generation(recovering: int, events_version: int) -> int:
    """The generation a full re-snapshot about to read the table appends as: the one its
    recovery opened, or one above a re-snapshot of it already appended (abandoned)."""
    return max(recovering, events_version + 1)


# -- micro-batches ---------------------------------------------------------------------------


def bronze_id(sink: str) -> str:
    """``txnAppId`` of a sink's micro-batch appends to bronze: the sink id itself."""
    return sink


def facts_id(sink: str) -> str:
    """``txnAppId`` of a sink's micro-batch facts commits."""
    return f"{sink}#facts"


def micro_batch(sink: str, batch_id: int) -> Txn:
    """The transaction of micro-batch ``batch_id``'s bronze append."""
    return Txn(bronze_id(sink), batch_id)


def batch_facts(sink: str, batch_id: int) -> Txn:
    """The transaction of micro-batch ``batch_id``'s facts commit."""
    return Txn(facts_id(sink), batch_id)


# -- whole snapshots -------------------------------------------------------------------------


def database_members(database_app_id: str, batch_id: int) -> Txn:
    """A database stream's membership rows of batch ``batch_id``: ``<D>#members``."""
    return Txn(f"{database_app_id}#members", batch_id)


def database_facts_id(database_app_id: str) -> str:
    """A database stream's facts commits' ``txnAppId``: ``<D>#database`` (never a sink's
    ``<sink>#facts``, whatever the names)."""
    return f"{database_app_id}#database"


def database_facts(database_app_id: str, batch_id: int) -> Txn:
    """A database stream's facts rows of batch ``batch_id``: ``<D>#database``."""
    return Txn(database_facts_id(database_app_id), batch_id)


def events_id(app_id: str) -> str:
    """``txnAppId`` of a stream's snapshot commits (bronze and facts)."""
    return f"{app_id}#events"


def bootstrap(app_id: str) -> Txn:
    """The transaction of the bootstrap snapshot (or seed) and of its ``bootstrap`` row."""
    return Txn(events_id(app_id), BOOTSTRAP_VERSION)


def resnapshot(app_id: str, generation: int) -> Txn:
    """The transaction of the re-snapshot that opens ``generation`` (>= 1) and of its
    ``resnapshot`` row: the user's ``<app_id>#events``, version the generation, above the
    bootstrap's 0.

    Raises:
        ValueError: ``generation`` < 1.
    """
    if generation < 1:
        raise ValueError(f"a re-snapshot opens generation 1 or later, got {generation}")
    return Txn(events_id(app_id), generation)


def owner(app_id: str | None) -> str:
    """Who a ``snapshot()`` or ``seed()`` is recorded for: the app_id, else
    :data:`ANONYMOUS_OWNER`."""
    return app_id if app_id is not None else ANONYMOUS_OWNER


def owned_id(app_id: str | None) -> str:
    """``txnAppId`` of a ``snapshot()`` or ``seed()`` append: ``<app_id>#events``, or
    :data:`ANONYMOUS_OWNER` without an app_id."""
    return events_id(app_id) if app_id is not None else ANONYMOUS_OWNER


def next_owned(app_id: str | None, recorded: int) -> Txn:
    """The transaction of a ``snapshot()`` or ``seed()`` append: the version after the one
    recorded (``-1``: none) for :func:`owned_id`."""
    return Txn(owned_id(app_id), recorded + 1)


def switch_id(sink: str) -> str:
    """``txnAppId`` of the snapshots ``snapshot_on_switch`` appends to bronze."""
    return f"{sink}#switch"


def switch(sink: str, batch_id: int) -> Txn:
    """The transaction of the snapshot appended after micro-batch ``batch_id`` switched
    capture instance."""
    return Txn(switch_id(sink), batch_id)


# -- chunked snapshots -----------------------------------------------------------------------


def chunked_open(app_id: str, generation: int) -> Txn:
    """The transaction of a chunked snapshot's ``snapshot_open`` row: the user's
    ``<app_id>#snapshots`` (every generation shares it), version the generation."""
    return Txn(f"{app_id}#snapshots", generation)


def chunk_plan(sink: str, snapshot_lsn: str) -> Txn:
    """The transaction of the ``snapshot_plan`` row of the chunked snapshot at
    ``snapshot_lsn`` (written once)."""
    return Txn(f"{sink}#snapplan.{snapshot_lsn}", 0)


def chunk_wave_id(sink: str, snapshot_lsn: str) -> str:
    """``txnAppId`` of the chunk appends to bronze and their ``snapshot_chunk`` rows."""
    return f"{sink}#snapchunks.{snapshot_lsn}"


def chunk_wave(sink: str, snapshot_lsn: str, first_chunk: int) -> Txn:
    """The transaction of a wave's bronze append: version the wave's first chunk number.

    Every run starts a wave right after the last chunk it saw in bronze, so a wave lands only
    when no wave from the same or a later chunk did, and then exactly after the last one: two
    ``backfill()`` runs whose waves start alike but end apart cannot both land (ADR 0200). The
    chunks bronze holds are the recorded wave's, up to its last (``landed.wave_end``)."""
    return Txn(chunk_wave_id(sink, snapshot_lsn), first_chunk)


def chunk_facts(sink: str, snapshot_lsn: str, first_chunk: int) -> Txn:
    """The transaction of the ``snapshot_chunk`` rows of a run of chunks bronze holds, from
    the one after the last the facts table records: version the run's first chunk number (the
    rule of :func:`chunk_wave`, on the facts table)."""
    return Txn(chunk_wave_id(sink, snapshot_lsn), first_chunk)
