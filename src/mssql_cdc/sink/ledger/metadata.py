"""The ``userMetadata`` of every commit the ledger makes, as JSON text, exactly as existing
tables hold it: bronze's history is read back (``landed.find_snapshot`` looks for a snapshot
commit's ``app_id`` and ``event``), and a change of keys, order or spacing would be a new
spelling of an old commit.

Pure, no Spark. Two spellings are in use and kept: the micro-batch commits' compact, sorted
JSON (:func:`batch`, :func:`batch_facts`), and ``json.dumps``'s default (keys in the order
given, ``", "`` and ``": "``) for every snapshot commit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import Any

from mssql_cdc.sink.facts import BatchCounts

__all__ = ["batch", "batch_facts", "chunk_wave", "database_fact", "snapshot", "snapshot_fact"]


def batch(sink: str, batch_id: int) -> str:
    """A micro-batch bronze commit's: ``{"app_id", "batch_id"}``. The counts are in the batch's
    facts row (and its facts commit's metadata): they come out of the pass that writes this
    commit, so they are not known before it (ADR 0090)."""
    meta = {"app_id": sink, "batch_id": batch_id}
    return json.dumps(meta, sort_keys=True, separators=(",", ":"))


def batch_facts(counts: BatchCounts, sink: str, batch_id: int) -> str:
    """A micro-batch facts commit's: the counts plus ``batch_id`` and ``app_id``, times as
    ISO-8601 with milliseconds (bronze commits carried it too before ADR 0090)."""
    payload: dict[str, Any] = asdict(counts)
    payload.update(batch_id=batch_id, app_id=sink)
    for key in ("min_commit_ts", "max_commit_ts"):
        value = payload[key]
        payload[key] = None if value is None else value.isoformat(timespec="milliseconds")
    return json.dumps(payload, sort_keys=True, separators=(",", ":"))


def snapshot(
    owner: str, event: str, lsn: str, capture_instance: str, extra: Mapping[str, object]
) -> str:
    """A whole snapshot's bronze commit's: ``{"app_id": owner, "event", "snapshot_lsn",
    "capture_instance", **extra}`` (``extra``: the kind's own keys, in order)."""
    meta: dict[str, object] = {
        "app_id": owner,
        "event": event,
        "snapshot_lsn": lsn,
        "capture_instance": capture_instance,
        **extra,
    }
    return json.dumps(meta)


def chunk_wave(
    sink: str, lsn: str, capture_instance: str, chunks: Sequence[int], *, run: str, stamp: str
) -> str:
    """A chunk wave's bronze commit's: ``{"app_id", "event": "snapshot_chunk", "snapshot_lsn",
    "capture_instance", "chunks", "attempt", "lsn"}`` (``attempt``: the ``backfill()`` call's
    token ``run``, which tells a run its own wave from another run's; ``lsn``: the ``stamp``
    the chunks were read at, which an empty chunk's rows cannot say; the two keys the
    reference's wave metadata gives them). Waves of earlier builds lack the last two."""
    meta = {
        "app_id": sink,
        "event": "snapshot_chunk",
        "snapshot_lsn": lsn,
        "capture_instance": capture_instance,
        "chunks": list(chunks),
        "attempt": run,
        "lsn": stamp,
    }
    return json.dumps(meta)


def snapshot_fact(app_id: str, event: str, lsn: str, generation: int | None = None) -> str:
    """A snapshot facts commit's (``bootstrap``, ``resnapshot`` with its ``generation``,
    ``snapshot_open`` of a chunked snapshot, ``snapshot_plan``, ``snapshot_chunk``):
    ``{"app_id", "event", "snapshot_lsn"(, "generation")}``."""
    meta: dict[str, object] = {"app_id": app_id, "event": event, "snapshot_lsn": lsn}
    if generation is not None:
        meta["generation"] = generation
    return json.dumps(meta)


def database_fact(database_app_id: str, event: str, batch_id: int, tables: int) -> str:
    """A database stream's facts commit's (``database_members``, ``database_facts``): compact,
    sorted ``{"app_id", "batch_id", "event", "tables"}`` (``tables``: the rows' sink ids)."""
    meta = {"app_id": database_app_id, "batch_id": batch_id, "event": event, "tables": tables}
    return json.dumps(meta, sort_keys=True, separators=(",", ":"))
