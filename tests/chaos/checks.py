"""The fault harness's checks: pure functions over rows, no Spark and no server.

A trial reads what the product wrote (bronze, the facts, silver, the control table, the Delta
logs) and what SQL Server holds (the change history, the commit times, the table at the end),
turns both into the plain records below, and each check compares them, adding what it finds to
:class:`Findings`. ``tests/chaos/test_checks.py`` proves each check bites on small hand-made
rows (a planted duplicate, a planted loss, ...).

The model of SQL Server's history: a change is identified by its commit LSN, ``seqval``,
operation and command id; a transaction is the changes of one commit LSN, ordered by
(command id, seqval, operation). Operation 1 deletes its key, 3 (the row before an update)
removes it too, 2 and 4 set it: an update that keeps its key writes 3 then 4 with that key, one
that moves the row writes 3 (or 1) with the old key and 4 (or 2) with the new one.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime as dt
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

#: a row's values, its key first
Image = tuple[Any, ...]
#: a key's state: its image, or ``None`` when the table lacks it
State = Image | None


@dataclasses.dataclass(frozen=True)
class Change:
    """A change row: of the history (``batch`` None) or of bronze (``batch`` its
    ``_batch_id``)."""

    lsn: str
    seqval: str
    op: int
    cmd: int | None
    image: Image
    instance: str = ""
    batch: int | None = None

    @property
    def ident(self) -> tuple[str, str, int, int | None]:
        return (self.lsn, self.seqval, self.op, self.cmd)

    @property
    def key(self) -> Any:
        return self.image[0]

    @property
    def order(self) -> tuple[str, int, int, str, int]:
        return (self.lsn, 0, self.cmd or 0, self.seqval, self.op)


@dataclasses.dataclass(frozen=True)
class SnapshotRow:
    """An operation-0 row of bronze: its snapshot (``_snapshot``), its stamp (``_start_lsn``:
    the LSN recorded before its table or chunk was read) and its chunk."""

    snapshot: str
    stamp: str
    image: Image
    chunk: int | None = None

    @property
    def key(self) -> Any:
        return self.image[0]

    @property
    def order(self) -> tuple[str, int, int, str, int]:
        # after every change of its stamp's LSN: a change at or before the stamp is in it
        return (self.stamp, 1, 0, "", 0)


@dataclasses.dataclass(frozen=True)
class Version:
    """A type 2 silver row: the key's image from the commit ``start`` until ``end`` (None:
    current); ``start_at``/``end_at`` its ``__START_AT``/``__END_AT`` when read from silver."""

    image: Image
    start: str
    end: str | None
    start_at: dt.datetime | None = None
    end_at: dt.datetime | None = None

    @property
    def key(self) -> Any:
        return self.image[0]


@dataclasses.dataclass
class Findings:
    """What the checks found: duplicates and losses counted, every broken promise described."""

    duplicates: int = 0
    losses: int = 0
    problems: list[str] = dataclasses.field(default_factory=list)
    #: what was checked, by what: "changes", "snapshot rows", "silver rows", ...
    checked: collections.Counter[str] = dataclasses.field(default_factory=collections.Counter)

    #: what is worth knowing but breaks no promise (a table parked and retried, ...)
    notes: list[str] = dataclasses.field(default_factory=list)

    def add(self, text: str) -> None:
        self.problems.append(text)

    def note(self, text: str) -> None:
        self.notes.append(text)

    def absorb(self, other: Findings, label: str) -> None:
        """Adds what ``other`` found (the checks of one table), each text led by ``label``."""
        self.duplicates += other.duplicates
        self.losses += other.losses
        self.problems += [f"{label}: {text}" for text in other.problems]
        self.notes += [f"{label}: {text}" for text in other.notes]
        self.checked.update(other.checked)


def _few(items: Iterable[Any], n: int = 3) -> list[Any]:
    return list(items)[:n]


# ---- the model of the source table ---------------------------------------------------------


def transactions(changes: Iterable[Change]) -> list[tuple[str, list[Change]]]:
    """The changes grouped by commit LSN, in commit order, each in its own order."""
    by_lsn: dict[str, list[Change]] = collections.defaultdict(list)
    for c in changes:
        by_lsn[c.lsn].append(c)
    return [(lsn, sorted(by_lsn[lsn], key=lambda c: c.order)) for lsn in sorted(by_lsn)]


def _apply(table: dict[Any, Image], change: Change) -> None:
    if change.op in (1, 3):
        table.pop(change.key, None)
    elif change.op in (2, 4):
        table[change.key] = change.image


def table_at(history: Iterable[Change], lsn: str | None = None) -> dict[Any, Image]:
    """The table as the commits up to ``lsn`` (all: None) left it, by key."""
    table: dict[Any, Image] = {}
    for at, txn in transactions(history):
        if lsn is not None and at > lsn:
            break
        for c in txn:
            _apply(table, c)
    return table


def key_states(history: Iterable[Change]) -> dict[Any, list[tuple[str, State]]]:
    """Each key's states: ``("", None)`` (before any commit), then its state after each
    commit that touched it, in commit order."""
    table: dict[Any, Image] = {}
    states: dict[Any, list[tuple[str, State]]] = collections.defaultdict(lambda: [("", None)])
    for lsn, txn in transactions(history):
        for c in txn:
            _apply(table, c)
        for key in dict.fromkeys(c.key for c in txn):
            states[key].append((lsn, table.get(key)))
    return states


def states_from(states: Sequence[tuple[str, State]], lsn: str) -> list[State]:
    """The states a key had at ``lsn`` (after the commits up to it) and at every later commit:
    what a read that started after ``lsn`` may have seen."""
    at = 0
    for n, (when, _) in enumerate(states):
        if when <= lsn:
            at = n
    return [state for _, state in states[at:]]


def rebuilt(
    snapshot: Sequence[SnapshotRow], changes: Iterable[Change], since: str
) -> dict[Any, tuple[Image, str]]:
    """What a downstream table rebuilds from a snapshot (``since``: its LSN): the snapshot's
    rows, each ranked at its stamp, and the changes after ``since``, the latest per key; deleted
    keys left out. Maps each key to its image and the LSN that gave it."""
    events: list[tuple[tuple[str, int, int, str, int], Any, State, str]] = [
        (r.order, r.key, r.image, r.stamp) for r in snapshot
    ]
    for c in changes:
        if c.lsn > since:
            events.append((c.order, c.key, None if c.op in (1, 3) else c.image, c.lsn))
    table: dict[Any, tuple[Image, str]] = {}
    for _, key, image, lsn in sorted(events, key=lambda e: e[0]):
        if image is None:
            table.pop(key, None)
        else:
            table[key] = (image, lsn)
    return table


def commit_events(changes: Iterable[Change]) -> dict[Any, list[tuple[str, State]]]:
    """Per key, one event per commit that changed it: the image the commit left (its last row
    of the key) or None for a delete."""
    events: dict[Any, list[tuple[str, State]]] = collections.defaultdict(list)
    for lsn, txn in transactions(changes):
        last: dict[Any, Change] = {}
        for c in txn:
            last[c.key] = c
        for key, c in last.items():
            events[key].append((lsn, None if c.op in (1, 3) else c.image))
    return events


def scd2_versions(base: Sequence[SnapshotRow], changes: Iterable[Change]) -> list[Version]:
    """The type 2 versions of ``base`` (a whole snapshot, each row an event at its stamp) and
    the committed transactions after it: a version per image a commit left that differs from
    the key's open one; a delete closes the open version; the next version closes it too."""
    since = min((r.stamp for r in base), default="")
    events = commit_events(c for c in changes if c.lsn > since)
    for r in base:
        events[r.key].insert(0, (r.stamp, r.image))
    versions: list[Version] = []
    for key in sorted(events, key=repr):
        open_: Version | None = None
        for lsn, image in sorted(events[key], key=lambda e: e[0]):
            if open_ is not None and (image is None or image != open_.image):
                versions.append(dataclasses.replace(open_, end=lsn))
                open_ = None
            if image is not None and open_ is None:
                open_ = Version(image, lsn, None)
        if open_ is not None:
            versions.append(open_)
    return versions


# ---- checks ----------------------------------------------------------------------------------


def check_changes(
    found: Findings,
    bronze: Sequence[Change],
    history: Sequence[Change],
    *,
    expected: Callable[[str], bool] = lambda lsn: True,
) -> None:
    """Bronze's change rows against the history: every change whose LSN is ``expected``
    exactly once with its values and instance; nothing else (no change outside, none unknown)."""
    counts = collections.Counter(c.ident for c in bronze)
    known = {c.ident: c for c in history}
    found.checked["changes"] += sum(1 for c in history if expected(c.lsn))
    twice = {k: n for k, n in counts.items() if n > 1}
    if twice:
        found.duplicates += sum(n - 1 for n in twice.values())
        found.add(
            f"{sum(twice.values()) - len(twice)} duplicate change rows in bronze, e.g. "
            f"{_few(twice)}"
        )
    lost = [c.ident for c in history if expected(c.lsn) and c.ident not in counts]
    if lost:
        found.losses += len(lost)
        found.add(f"{len(lost)} changes missing from bronze, e.g. {_few(lost)}")
    unknown = [k for k in counts if k not in known]
    if unknown:
        found.add(f"{len(unknown)} bronze rows not in the history, e.g. {_few(unknown)}")
    outside = [k for k in counts if k in known and not expected(k[0])]
    if outside:
        found.add(
            f"{len(outside)} bronze change rows outside what the stream delivers (covered by a "
            f"snapshot or lost), e.g. {_few(outside)}"
        )
    wrong = [
        c.ident
        for c in bronze
        if c.ident in known
        and (
            c.image != known[c.ident].image
            or (known[c.ident].instance and c.instance != known[c.ident].instance)
        )
    ]
    if wrong:
        found.add(f"{len(wrong)} bronze rows with wrong values, e.g. {_few(wrong)}")


def check_snapshot(
    found: Findings,
    rows: Sequence[SnapshotRow],
    history: Sequence[Change],
    *,
    lsn: str,
    ranges: Sequence[tuple[Any, Any, str]] | None = None,
    label: str = "snapshot",
) -> None:
    """One snapshot (the rows of one ``_snapshot`` ``lsn``) against the history: each key
    once; each row's stamp at or after ``lsn`` and its image one the key had at its stamp or
    later (a read committed read that started after the stamp); each key missing from it
    absent at some moment at or after the stamp of the range that holds it. ``ranges``: a
    chunked snapshot's chunks ``(lo, hi, stamp)`` (None bounds open), else the whole table
    read at the rows' stamp (``lsn`` when empty)."""
    states = key_states(history)
    found.checked["snapshot rows"] += len(rows)
    counts = collections.Counter(r.key for r in rows)
    twice = {k: n for k, n in counts.items() if n > 1}
    if twice:
        found.duplicates += sum(n - 1 for n in twice.values())
        found.add(f"{label} {lsn}: keys more than once, e.g. {_few(twice.items())}")
    early = [r.key for r in rows if r.stamp < lsn or r.snapshot != lsn]
    if early:
        found.add(f"{label} {lsn}: rows stamped before the snapshot, e.g. {_few(early)}")
    stale = [
        (r.key, r.image)
        for r in rows
        if r.image not in [s for s in states_from(states.get(r.key, [("", None)]), r.stamp) if s]
    ]
    if stale:
        found.add(
            f"{label} {lsn}: {len(stale)} rows with an image the key never had at or after "
            f"their stamp, e.g. {_few(stale)}"
        )
    if ranges is None:
        stamp = min((r.stamp for r in rows), default=lsn)
        ranges = [(None, None, stamp)]
    missing = []
    for key, key_history in states.items():
        if key in counts:
            continue
        for lo, hi, stamp in ranges:
            if (lo is None or key >= lo) and (hi is None or key < hi):
                if None not in states_from(key_history, stamp):
                    missing.append(key)
                break
    if missing:
        found.losses += len(missing)
        found.add(
            f"{label} {lsn}: {len(missing)} keys missing that the table held throughout the "
            f"read, e.g. {_few(sorted(missing, key=repr))}"
        )


def check_table(
    found: Findings,
    got: Mapping[Any, Image],
    want: Mapping[Any, Image],
    *,
    label: str,
) -> None:
    """A table by key against the source's: a key missing is a loss, an extra key or another
    image a broken promise."""
    found.checked[f"{label} rows"] += len(want)
    missing = [k for k in want if k not in got]
    if missing:
        found.losses += len(missing)
        found.add(f"{label}: {len(missing)} keys missing, e.g. {_few(sorted(missing, key=repr))}")
    extra = [k for k in got if k not in want]
    if extra:
        found.add(f"{label}: {len(extra)} keys the source lacks, e.g. {_few(sorted(extra))}")
    wrong = [(k, got[k], want[k]) for k in want if k in got and got[k] != want[k]]
    if wrong:
        found.add(f"{label}: {len(wrong)} rows differ (key, got, want), e.g. {_few(wrong)}")


def check_silver_type1(
    found: Findings,
    silver: Sequence[tuple[Image, str]],
    expected: Mapping[Any, tuple[Image, str]],
) -> None:
    """Type 1 silver (image, ``_start_lsn``) rows against the rebuilt table: one row per key,
    the image and the LSN of the change that gave it."""
    counts = collections.Counter(image[0] for image, _ in silver)
    twice = {k: n for k, n in counts.items() if n > 1}
    if twice:
        found.duplicates += sum(n - 1 for n in twice.values())
        found.add(f"silver: keys more than once, e.g. {_few(twice.items())}")
    check_table(
        found,
        {image[0]: image for image, _ in silver},
        {k: image for k, (image, _) in expected.items()},
        label="silver",
    )
    stamps = {image[0]: lsn for image, lsn in silver}
    wrong = [(k, stamps[k], lsn) for k, (_, lsn) in expected.items() if stamps.get(k, lsn) != lsn]
    if wrong:
        found.add(
            f"silver: {len(wrong)} rows with another _start_lsn (key, got, want), e.g. "
            f"{_few(wrong)}"
        )


def check_silver_type2(
    found: Findings,
    silver: Sequence[Version],
    expected: Sequence[Version],
    times: Mapping[str, dt.datetime],
) -> None:
    """Type 2 silver against the versions of the committed transactions: each (key, start)
    once, with its image and end; ``__START_AT``/``__END_AT`` the commit times of its start and
    end."""
    found.checked["silver versions"] += len(expected)
    counts = collections.Counter((v.key, v.start) for v in silver)
    twice = {k: n for k, n in counts.items() if n > 1}
    if twice:
        found.duplicates += sum(n - 1 for n in twice.values())
        found.add(f"silver history: versions more than once, e.g. {_few(twice)}")
    got = {(v.key, v.start): v for v in silver}
    want = {(v.key, v.start): v for v in expected}
    missing = [k for k in want if k not in got]
    if missing:
        found.losses += len(missing)
        found.add(
            f"silver history: {len(missing)} versions missing (key, start), e.g. "
            f"{_few(sorted(missing, key=repr))}"
        )
    extra = [k for k in got if k not in want]
    if extra:
        found.add(
            f"silver history: {len(extra)} versions no transaction made (key, start), "
            f"e.g. {_few(sorted(extra, key=repr))}"
        )
    wrong = [
        (k, (got[k].image, got[k].end), (want[k].image, want[k].end))
        for k in want
        if k in got and (got[k].image, got[k].end) != (want[k].image, want[k].end)
    ]
    if wrong:
        found.add(
            f"silver history: {len(wrong)} versions differ (key, got, want), e.g. {_few(wrong)}"
        )
    off = [
        (v.key, v.start)
        for v in silver
        if (v.start in times and v.start_at != times[v.start])
        or (v.end is None) != (v.end_at is None)
        or (v.end is not None and v.end in times and v.end_at != times[v.end])
    ]
    if off:
        found.add(
            f"silver history: {len(off)} versions whose __START_AT/__END_AT are not the "
            f"commit times of their LSNs, e.g. {_few(off)}"
        )


def _detail(row: Mapping[str, Any]) -> dict[str, Any]:
    text = row.get("detail")
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def check_batch_facts(
    found: Findings, changes: Sequence[Change], facts: Sequence[Mapping[str, Any]]
) -> int:
    """The micro-batch facts rows (``event`` NULL) against bronze: one per (app_id, batch id);
    each one's ``rows`` equals bronze's change rows of that batch id inside its
    [``min_lsn``, ``max_lsn``] (generations reuse batch ids over disjoint LSN ranges); every
    bronze change row is counted by exactly one. Returns the number of batch rows."""
    batches = [f for f in facts if f.get("event") is None]
    counts = collections.Counter((f["app_id"], f["batch_id"]) for f in batches)
    twice = [k for k, n in counts.items() if n > 1]
    if twice:
        found.duplicates += sum(counts[k] - 1 for k in twice)
        found.add(f"facts rows written twice for batches {_few(twice, 5)}")
    by_batch: dict[int | None, list[Change]] = collections.defaultdict(list)
    for c in changes:
        by_batch[c.batch].append(c)
    covered: collections.Counter[tuple[str, str, int, int | None]] = collections.Counter()
    off = {}
    for f in {(f["app_id"], f["batch_id"]): f for f in batches}.values():
        lo, hi = f.get("min_lsn"), f.get("max_lsn")
        inside = [
            c
            for c in by_batch.get(f["batch_id"], [])
            if lo is not None and hi is not None and lo <= c.lsn <= hi
        ]
        covered.update(c.ident for c in inside)
        if f["rows"] != len(inside):
            off[(f["app_id"], f["batch_id"])] = (f["rows"], len(inside))
    if off:
        found.add(f"facts rows != bronze rows ((app_id, batch): (facts, bronze)) {off}")
    orphans = [c.ident for c in changes if covered[c.ident] == 0]
    if orphans:
        found.add(
            f"{len(orphans)} bronze change rows no facts batch row counts, e.g. {_few(orphans)}"
        )
    found.checked["batches"] += len(counts)
    return len(counts)


def check_batch_total(
    found: Findings, changes: Sequence[Change], facts: Sequence[Mapping[str, Any]]
) -> None:
    """The micro-batch facts rows (``event`` NULL) of one sink id against its bronze: their
    ``rows`` sum to bronze's change rows (each batch on its own, and batch ids written twice:
    :func:`check_batch_facts`)."""
    total = sum(f["rows"] or 0 for f in facts if f.get("event") is None)
    if total != len(changes):
        found.add(
            f"the micro-batch facts rows count {total} rows in all, bronze holds "
            f"{len(changes)} change rows"
        )


def check_snapshot_facts(
    found: Findings,
    snapshots: Mapping[str, Sequence[SnapshotRow]],
    facts: Sequence[Mapping[str, Any]],
    *,
    closing: Mapping[str, str],
) -> None:
    """The snapshot event rows against bronze's snapshots. ``closing`` names, per snapshot LSN
    that must be complete, the app_id of its closing row (``bootstrap`` for generation 0,
    ``resnapshot`` after): exactly one such row, whose ``rows`` equals the snapshot's rows.
    A chunked snapshot (rows with ``_chunk``, or a ``snapshot_plan`` row) also has one plan
    row and one ``snapshot_chunk`` row per chunk of the plan, whose ``rows`` equals bronze's
    rows of that chunk."""
    closes = [f for f in facts if f.get("event") in ("bootstrap", "resnapshot")]
    for lsn, app_id in closing.items():
        rows = [f for f in closes if f.get("max_lsn") == lsn and f["app_id"] == app_id]
        if len(rows) != 1:
            if rows:
                found.duplicates += len(rows) - 1
            found.add(f"snapshot {lsn}: {len(rows)} closing facts rows for {app_id} (want 1)")
        elif rows[0]["rows"] != len(snapshots.get(lsn, ())):
            found.add(
                f"snapshot {lsn}: its closing row says {rows[0]['rows']} rows, bronze holds "
                f"{len(snapshots.get(lsn, ()))}"
            )
    stray = [
        (f["event"], f["app_id"], f.get("max_lsn"))
        for f in closes
        if closing.get(f.get("max_lsn") or "") != f["app_id"]
    ]
    if stray:
        found.add(f"closing facts rows for no snapshot the trial took: {stray}")
    plans = collections.Counter(
        _detail(f).get("snapshot") for f in facts if f.get("event") == "snapshot_plan"
    )
    chunked = set(plans) | {
        lsn for lsn, rows in snapshots.items() if any(r.chunk is not None for r in rows)
    }
    for lsn in sorted(x for x in chunked if x is not None):
        if plans[lsn] != 1:
            found.add(f"chunked snapshot {lsn}: {plans[lsn]} snapshot_plan rows (want 1)")
        _check_chunks(found, lsn, snapshots.get(lsn, ()), facts, closed=lsn in closing)


def _check_chunks(
    found: Findings,
    lsn: str,
    rows: Sequence[SnapshotRow],
    facts: Sequence[Mapping[str, Any]],
    *,
    closed: bool,
) -> None:
    """One chunked snapshot's ``snapshot_chunk`` rows: one per chunk, each with bronze's rows
    of the chunk; once ``closed``, every chunk of the plan."""
    plan = next(
        (
            _detail(f)
            for f in facts
            if f.get("event") == "snapshot_plan" and _detail(f).get("snapshot") == lsn
        ),
        {},
    )
    total = len(plan.get("chunks") or [])
    chunk_facts = [
        f for f in facts if f.get("event") == "snapshot_chunk" and _detail(f).get("snapshot") == lsn
    ]
    per_chunk = collections.Counter(_detail(f).get("chunk") for f in chunk_facts)
    twice = [c for c, n in per_chunk.items() if n > 1]
    if twice:
        found.duplicates += sum(per_chunk[c] - 1 for c in twice)
        found.add(f"chunked snapshot {lsn}: chunks recorded twice {twice}")
    bronze_chunks = collections.Counter(r.chunk for r in rows)
    off = {
        _detail(f).get("chunk"): (f["rows"], bronze_chunks.get(_detail(f).get("chunk"), 0))
        for f in chunk_facts
        if f["rows"] != bronze_chunks.get(_detail(f).get("chunk"), 0)
    }
    if off:
        found.add(f"chunked snapshot {lsn}: chunk rows (facts, bronze) differ {off}")
    unrecorded = sorted(c for c in bronze_chunks if c not in per_chunk)
    if unrecorded:
        found.add(f"chunked snapshot {lsn}: chunks in bronze without a facts row {unrecorded}")
    found.checked["chunks"] += total
    if closed:
        missing = sorted(set(range(total)) - set(per_chunk))
        if missing:
            found.losses += len(missing)
            found.add(
                f"chunked snapshot {lsn}: closed with chunks {missing} of {total} never recorded"
            )
        beyond = sorted(c for c in per_chunk if not isinstance(c, int) or not 0 <= c < total)
        if beyond:
            found.add(f"chunked snapshot {lsn}: chunks outside the plan {beyond}")


def chunk_ranges(facts: Sequence[Mapping[str, Any]], lsn: str) -> list[tuple[Any, Any, str]]:
    """The (lo, hi, stamp) of each recorded chunk of the chunked snapshot ``lsn`` (a single
    integer key: a bound is the key or a one-element list)."""

    def bound(value: Any) -> Any:
        return value[0] if isinstance(value, list) and len(value) == 1 else value

    ranges = []
    for f in facts:
        d = _detail(f)
        if f.get("event") == "snapshot_chunk" and d.get("snapshot") == lsn:
            ranges.append((bound(d.get("lo")), bound(d.get("hi")), f["min_lsn"]))
    return ranges


def check_verdicts(
    found: Findings,
    states: Sequence[tuple[dt.datetime | None, set[tuple[str, str, int, int | None]]]],
    history: Sequence[Change],
    times: Mapping[str, dt.datetime],
    *,
    delivered: Callable[[str], bool] = lambda lsn: True,
    label: str = "bronze",
) -> None:
    """Each (verdict, change identities held) read at one moment, the verdict first: every
    change the table delivers (``delivered``) committed before the verdict is held."""
    for n, (verdict, held) in enumerate(states):
        if verdict is None:
            continue
        found.checked["verdicts"] += 1
        early = [
            c.ident
            for c in history
            if delivered(c.lsn) and times[c.lsn] < verdict and c.ident not in held
        ]
        if early:
            found.add(
                f"{label} state {n}: verdict {verdict} is past what it holds: {len(early)} "
                f"changes committed before it are missing, e.g. {_few(early)}"
            )


def check_txn_versions(found: Findings, versions: Sequence[int], *, app_id: str, want: int) -> None:
    """The ``txnVersion``s one ``txnAppId`` committed (from the Delta log): 0 to ``want`` - 1,
    each once."""
    if sorted(versions) != list(range(want)):
        found.add(f"txnAppId {app_id}: versions {sorted(versions)}, want 0..{want - 1}")


def delta_log(lines_by_version: Mapping[int, Iterable[str]]) -> list[dict[str, Any]]:
    """Each commit of a Delta log (its JSON lines by version): ``version``, ``txns``
    [(appId, version)], ``userMetadata`` and whether it added files."""
    commits = []
    for version in sorted(lines_by_version):
        commit: dict[str, Any] = {"version": version, "txns": [], "userMetadata": None, "adds": 0}
        for line in lines_by_version[version]:
            if not line.strip():
                continue
            action = json.loads(line)
            if "txn" in action:
                commit["txns"].append((action["txn"]["appId"], int(action["txn"]["version"])))
            elif "commitInfo" in action:
                commit["userMetadata"] = action["commitInfo"].get("userMetadata")
            elif "add" in action:
                commit["adds"] += 1
        commits.append(commit)
    return commits
