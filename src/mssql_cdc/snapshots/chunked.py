"""``to_delta(..., bootstrap=True, snapshot="chunked")``: opening a chunked snapshot, and the
rule of one open snapshot per stream (docs/bootstrap.md#chunked-snapshots-and-backfill;
ADR 0160).

Runs on the driver, before the query starts. Opening records the snapshot LSN S
(``sys.fn_cdc_get_max_lsn()``, as a full bootstrap does), checks the table has a key to cut
by, and writes the ``snapshot_open`` facts row (mode ``chunked``, once per generation: the
ledger's ``chunked_open`` commit): nothing is read, the stream starts at S at once, and
``CdcStream.backfill()`` reads the table in chunks next to it (:mod:`.backfill`). A rerun finds
the open (or closed) snapshot and starts from the same S; a stream that already has a whole
snapshot starts after it.

:func:`refuse_open_chunked` is the mode rule the other snapshot entries apply: while a stream's
chunked snapshot is open, no full snapshot, ``snapshot()`` or ``seed()`` may be taken for it,
and no other stream may open a second chunked snapshot of the same target.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from mssql_cdc.sink import SnapshotOpened

if TYPE_CHECKING:
    from mssql_cdc.sink import Ledger
    from mssql_cdc.snapshots.reader import TableReader

__all__ = ["open_chunked", "refuse_open_chunked"]

log = logging.getLogger("mssql_cdc.snapshots")


def refuse_open_chunked(ledger: Ledger, what: str) -> None:
    """Raises ``ValueError`` naming the open chunked snapshot when the ledger's stream has one
    open for its target: ``what`` (a full bootstrap, ``snapshot()``, ``seed()``) may not run
    meanwhile. Without a facts table or app_id nothing is known, so nothing is refused."""
    if ledger.tables.facts is None or ledger.app_id is None:
        return
    found = ledger.chunked()
    if found is None or found.complete:
        return
    raise ValueError(
        f"{what}: the stream {ledger.app_id!r} has a chunked snapshot of {ledger.target.text} "
        f"open (snapshot LSN {found.snapshot_lsn}, generation {found.generation}): one open "
        "snapshot per stream. Finish it first: call CdcStream.backfill(target, app_id=..., "
        "facts_table=...) until it returns state 'done'"
    )


def open_chunked(reader: TableReader, ledger: Ledger) -> str:
    """Finds or opens the stream's chunked snapshot; returns the LSN the stream starts after.

    Raises:
        ValueError: another stream has a chunked snapshot of the target open, or the table has
            no key to cut by.
    """
    app_id, target = ledger.stream, ledger.target
    own = ledger.chunked()
    if own is not None:
        state = "closed" if own.complete else "open"
        log.info(
            "%s: chunked snapshot of %s at %s already %s; reading nothing",
            app_id,
            target.text,
            own.snapshot_lsn,
            state,
        )
        return own.snapshot_lsn
    whole = ledger.bootstrap_lsn()
    if whole is not None:
        log.info(
            "%s: snapshot of %s at %s already taken; reading nothing", app_id, target.text, whole
        )
        return whole
    # the stream has no chunked snapshot of the target in any generation (above): every open
    # one is another stream's
    others = ledger.others_open()
    if others:
        other = others[0]
        raise ValueError(
            f"snapshot='chunked': the stream {other.app_id!r} has a chunked snapshot of "
            f"{target.text} open (snapshot LSN {other.snapshot_lsn}, generation "
            f"{other.generation}); a second one would interleave its chunks. Finish it with "
            "backfill() first, or write this stream to another target"
        )
    keys = reader.chunk_key()
    position = reader.position()
    lsn = str(position.lsn)
    ledger.open_chunked(SnapshotOpened(lsn, position.commit_ts, 0, "chunked", keys=tuple(keys)))
    log.info(
        "%s: chunked snapshot of %s into %s opened at %s (key %s): the stream starts there, "
        "backfill() reads the table",
        app_id,
        reader.capture_instance,
        target.text,
        lsn,
        ", ".join(keys),
    )
    return lsn
