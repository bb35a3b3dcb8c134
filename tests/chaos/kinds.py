"""The fault harness's trial kinds: one per kind of commit the product makes.

Each kind fixes, from the trial's seed (through its own random stream, so that the ``stream``
kind's plan, :func:`chaos_harness.plan`, is what it always was): the rows the table holds before
the job starts, the kind's arguments, and its *focus kills*: SIGKILLs of the driver at a random
delay after a marker of the kind's own work (its Spark session up, the switch committed, the
re-snapshot's second part started, a database stream's first table commit), on top of the
trial's planned faults. :func:`job` is the driver's job file; :func:`check` turns what the trial
read into records and runs the checks of ``checks.py`` that the kind's promises call for.

The kinds, in :data:`TRIAL_KINDS` order: ``stream``, ``bootstrap_full``, ``bootstrap_chunked``,
``snapshot``, ``seed``, ``resnapshot_full``, ``resnapshot_chunked``, ``switch``,
``silver_type1``, ``silver_type2`` and ``database`` (``start_database`` over ``dbo_orders`` and
``dbo_other``: one query, each table under its own sink id, checked table by table).
"""

from __future__ import annotations

import collections
import dataclasses
import datetime as dt
import random
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import checks
from checks import Change, Findings, SnapshotRow, Version

#: the trial kinds, in the tables' order
TRIAL_KINDS = (
    "stream",
    "bootstrap_full",
    "bootstrap_chunked",
    "snapshot",
    "seed",
    "resnapshot_full",
    "resnapshot_chunked",
    "switch",
    "silver_type1",
    "silver_type2",
    # last: a list of the older kinds gives each seed the kind it always gave (``all``, one
    # longer now, does not)
    "database",
)

#: per kind: the marker the focus kills wait for, and the most seconds after it they wait
FOCUS: dict[str, tuple[str, float]] = {
    "stream": ("ready", 0.0),  # none: the plan's own SIGKILL
    "bootstrap_full": ("spark", 15.0),
    "bootstrap_chunked": ("spark", 45.0),
    "snapshot": ("spark", 30.0),
    "seed": ("spark", 15.0),
    "resnapshot_full": ("phase_b", 15.0),
    "resnapshot_chunked": ("phase_b", 45.0),
    "switch": ("switched", 20.0),
    "silver_type1": ("spark", 50.0),
    "silver_type2": ("spark", 50.0),
    "database": ("ready", 20.0),
}

#: the database kind's other focus markers, and the most seconds after each a kill waits: the
#: driver's first bronze commit of a table starting (its write under way: the read from SQL
#: Server and the files) and landing (the other table's commit and the batch's facts commit
#: still to come). Measured in the Delta logs of six trials on the 2-core machine: a table's
#: write takes 1.3-2.7 s from its commit's start; the other table's commit lands 0.2-0.3 s later
#: with ``parallel`` 2, 1.3 s later with 1; the facts commit 0.3-0.5 s after the last one.
#: Markers that may never come (a restarted driver may find nothing new to write): a focus kill
#: gives up on them once the workload is done (``MAY_NOT_COME``).
TABLE_MARKERS = {"table_writing": 2.0, "table_committed": 0.6}
MAY_NOT_COME = frozenset(TABLE_MARKERS)

APP_ID = "orders-chaos"

#: the database kind: its stream's name, its tables' sink id template, and each capture
#: instance's columns (the key first), in the order the stream lists them
DATABASE_NAME = "chaos-db"
DATABASE_APP_ID = "chaos-{ci}"
DATABASE_TABLES: dict[str, tuple[str, ...]] = {
    "dbo_orders": ("id", "name", "qty"),
    "dbo_other": ("id", "note"),
}


def database_app_id(capture_instance: str) -> str:
    """A table's sink id in the database kind (``app_id`` of its facts rows)."""
    return DATABASE_APP_ID.replace("{ci}", capture_instance)


#: per kind, what a driver thread is doing (``<thread>=<phase>``) when a kill lands inside the
#: kind's own work: the bootstrap and the re-snapshot run inside ``to_delta`` before its query
WORK: dict[str, tuple[str, ...]] = {
    "stream": ("stream=query",),
    "bootstrap_full": ("stream=to_delta",),
    "bootstrap_chunked": ("stream=to_delta", "backfill=wave"),
    "snapshot": ("main=snapshot",),
    "seed": ("main=seed",),
    "resnapshot_full": ("stream=to_delta",),
    "resnapshot_chunked": ("stream=to_delta", "backfill=wave"),
    "switch": ("stream=query",),
    "silver_type1": ("silver=apply",),
    "silver_type2": ("silver=apply",),
    # the driver's observation of the database stream's commits (``driver.observe_commits``):
    # between a batch's first commit and its facts commit
    "database": ("db=writing",),
}


def in_work(kind: str, phases: str) -> bool:
    """Whether a kill that found the driver's threads at ``phases`` landed in the kind's
    work."""
    return any(work in phases for work in WORK[kind])


def kind_of(seed: int, kinds: Sequence[str]) -> str:
    """The kind of trial ``seed`` among ``kinds``: round robin over the seeds, so contiguous
    seeds share the kinds evenly, and a one-kind list replays any seed as that kind."""
    return kinds[seed % len(kinds)]


@dataclasses.dataclass
class KindPlan:
    kind: str
    #: rows inserted (and captured) before the driver starts
    prefill: int
    #: focus kills: (marker, seconds after it)
    focus: list[tuple[str, float]]
    params: dict[str, Any]

    def describe(self) -> str:
        kills = ", ".join(f"{m}+{d:.1f}s" for m, d in self.focus) or "none"
        shown = {k: v for k, v in self.params.items() if k != "calls"}
        if "calls" in self.params:
            shown["calls"] = [
                ("resnapshot" if c["resnapshot"] else "reuse") + ("+facts" if c["facts"] else "")
                for c in self.params["calls"]
            ]
        return f"{self.kind}: prefill {self.prefill}, focus kills {kills}, {shown}"


def plan_kind(kind: str, seed: int, *, large: int = 0) -> KindPlan:
    """The kind's part of trial ``seed``'s plan; ``large``: the rows of the workload's large
    transaction (0: none), which the chunks of a chunked snapshot share with the prefill."""
    if kind not in TRIAL_KINDS:
        raise ValueError(f"unknown trial kind {kind!r}; kinds: {', '.join(TRIAL_KINDS)}")
    rng = random.Random(f"chaos-kind:{kind}:{seed}")
    if kind == "stream":
        return KindPlan(kind, 0, [], {})
    prefill = rng.randint(300, 2000)
    if kind == "database":
        return _plan_database(rng, prefill)
    marker, most = FOCUS[kind]
    focus = [(marker, round(rng.uniform(0.5, most), 1))]
    if rng.random() < 0.5:  # a second kill in the restarted driver's same work
        again = "ready" if marker == "switched" else marker
        focus.append((again, round(rng.uniform(0.5, most), 1)))
    params: dict[str, Any] = {}
    if kind in ("bootstrap_chunked", "resnapshot_chunked"):
        params["chunk_rows"] = max((prefill + large) // rng.randint(4, 10), 1)
        params["min_headroom_hours"] = rng.choice([None, 1.0])
        # its own generator, so that the draws above (and every older seed's plan) stay put
        overlap = random.Random(f"chaos-overlap:{kind}:{seed}")
        params["overlap_partitions"] = overlap.choice([None, 1, 3])
    elif kind == "snapshot":
        n = rng.randint(2, 4)
        params["calls"] = [
            {
                "resnapshot": i > 0 and rng.random() < 0.75,
                "facts": rng.random() < 0.5,
                "pause": round(rng.uniform(0.5, 3.0), 1),
            }
            for i in range(n)
        ]
    elif kind == "seed":
        params["as_of"] = rng.choice(["lsn", "time"])
        params["between"] = rng.randint(0, 3)  # transactions between as_of and the copy's read
    elif kind == "switch":
        params["at"] = round(rng.uniform(0.2, 0.8), 2)  # where in the workload the DDL goes
    elif kind.startswith("silver"):
        params["bootstrap"] = rng.random() < 0.5
        params["options"] = rng.random() < 0.5
    if kind.startswith("resnapshot"):
        params["before"] = rng.randint(2, 6)  # generation 0's transactions after the prefill
    return KindPlan(kind, prefill, focus, params)


def _plan_database(rng: random.Random, prefill: int) -> KindPlan:
    """The database kind: a first kill a while after the query started, or just after the
    driver's first table commit started or landed (:data:`TABLE_MARKERS`: inside the first
    table's write, between two tables' commits, before the batch's facts commit); in half the
    trials a second one just after the restarted driver's first table commit started or landed
    (often in the killed batch's replay). ``parallel`` 1 writes the tables one after the other,
    so a kill falls between two tables' commits more often; the heartbeat interval 0 gives every
    idle table a 0-row row each batch."""
    marker, most = FOCUS["database"]
    first = rng.choice([marker, *TABLE_MARKERS])
    if first == marker:
        focus = [(marker, round(rng.uniform(0.5, most), 1))]
    else:
        focus = [(first, round(rng.uniform(0.0, TABLE_MARKERS[first]), 1))]
    if rng.random() < 0.5:
        again = rng.choice(list(TABLE_MARKERS))
        focus.append((again, round(rng.uniform(0.0, TABLE_MARKERS[again]), 1)))
    params: dict[str, Any] = {
        "parallel": rng.choice([1, 2]),
        "heartbeat_seconds": rng.choice([None, 0]),
        "other_prefill": rng.randint(20, 200),  # dbo.other's rows before the driver starts
    }
    return KindPlan("database", prefill, focus, params)


def job(
    kind_plan: KindPlan,
    base: dict[str, Any],
    workdir: Path,
    *,
    seed_copy: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The driver's job file: ``base`` (options, trigger, master) and the kind's part."""
    kind, p = kind_plan.kind, kind_plan.params
    spec: dict[str, Any] = {
        **base,
        "kind": kind,
        "dir": str(workdir),
        "bronze": str(workdir / "bronze"),
        "facts": str(workdir / "facts"),
        "checkpoint": str(workdir / "cp"),
        "control": str(workdir / "control"),
        "app_id": APP_ID,
        "track": True,
        "to_delta": {},
    }
    if kind in ("bootstrap_full", "snapshot", "seed") or p.get("bootstrap"):
        spec["to_delta"] = {"bootstrap": True}
    elif kind == "bootstrap_chunked":
        spec["to_delta"] = {"bootstrap": True, "snapshot": "chunked"}
    elif kind.startswith("resnapshot"):
        spec["gen0_to_delta"] = {}
        spec["to_delta"] = {
            "on_data_loss": "resnapshot",
            "resnapshot_interval_days": 0,
            "snapshot": "chunked" if kind.endswith("chunked") else "full",
        }
    elif kind == "switch":
        spec["to_delta"] = {"snapshot_on_switch": True}
    if "chunk_rows" in p:
        spec["backfill"] = {
            "chunk_rows": p["chunk_rows"],
            "min_headroom_hours": p["min_headroom_hours"],
            "overlap_partitions": p.get("overlap_partitions"),
        }
    if kind == "snapshot":
        spec["snapshot"] = {"calls": p["calls"]}
    if kind == "seed":
        assert seed_copy is not None
        spec["seed"] = seed_copy
    if kind.startswith("silver"):
        spec["silver"] = {
            "path": str(workdir / "silver"),
            "scd_type": 2 if kind.endswith("2") else 1,
            "options": p["options"],
        }
    if kind == "database":
        # every table's options but the capture instance; no finalization tracking (its
        # verdict follows one stream's bronze table); one checkpoint for the query
        spec["options"] = {k: v for k, v in base["options"].items() if k != "captureInstance"}
        spec["track"] = False
        spec["checkpoint"] = str(workdir / "chk-db")
        spec["database"] = {
            "name": DATABASE_NAME,
            "instances": list(DATABASE_TABLES),
            "target": str(workdir / "bronze" / "{ci}"),
            "app_id": DATABASE_APP_ID,
            "parallel": p["parallel"],
            "heartbeat_seconds": p["heartbeat_seconds"],
            "tables": {ci: str(workdir / "bronze" / ci) for ci in DATABASE_TABLES},
        }
    return spec


# ---- reading what the trial left --------------------------------------------------------------


@dataclasses.dataclass
class TableTruth:
    """What SQL Server holds of one capture instance at a trial's end: its change history, its
    table by key, and the columns of its images (the key first)."""

    history: list[Change]
    table: dict[Any, tuple[Any, ...]]
    columns: tuple[str, ...]


@dataclasses.dataclass
class TrialData:
    """What a trial read at its end (and, for a re-snapshot, before the purge)."""

    history: list[Change]
    times: dict[str, dt.datetime]
    table: dict[Any, tuple[Any, ...]]
    states: list[dict[str, Any]]
    progress: dict[str, Any]
    bronze_log: list[dict[str, Any]]
    generation: dict[str, Any] | None = None
    #: a re-snapshot trial: the last LSN generation 0 read before the purge
    purged_after: str | None = None
    seed_copy: dict[str, Any] | None = None
    columns: tuple[str, ...] = ("id", "name", "qty")
    #: the database kind: each capture instance's truth, by name
    tables: dict[str, TableTruth] = dataclasses.field(default_factory=dict)


def _ts(text: Any) -> dt.datetime | None:
    if text is None:
        return None
    value = dt.datetime.fromisoformat(text) if isinstance(text, str) else text
    return value.replace(tzinfo=None)


def bronze_records(
    rows: Sequence[Mapping[str, Any]], columns: Sequence[str]
) -> tuple[list[Change], dict[str, list[SnapshotRow]]]:
    """Bronze's rows as change records and snapshot rows by ``_snapshot``."""
    changes, snapshots = [], collections.defaultdict(list)
    for r in rows:
        image = tuple(r.get(c) for c in columns)
        if r["_operation"] == 0:
            snapshots[r["_snapshot"]].append(
                SnapshotRow(r["_snapshot"], r["_start_lsn"], image, r.get("_chunk"))
            )
        else:
            changes.append(
                Change(
                    r["_start_lsn"],
                    r["_seqval"],
                    r["_operation"],
                    r["_command_id"],
                    image,
                    r.get("_capture_instance") or "",
                    r["_batch_id"],
                )
            )
    return changes, dict(snapshots)


def _control_state(state: Mapping[str, Any], table: str) -> tuple[dt.datetime | None, str | None]:
    row = state["control"].get(table) or {}
    return _ts(row.get("finalized_until")), row.get("applied_lsn")


# ---- the checks of each kind ---------------------------------------------------------------


def _start(
    found: Findings,
    kind_plan: KindPlan,
    data: TrialData,
    facts: Sequence[Mapping[str, Any]],
    snapshots: Mapping[str, Sequence[SnapshotRow]],
) -> tuple[str | None, dict[str, str], Callable[[str], bool]]:
    """The snapshot the stream starts after, the snapshots that must be closed (LSN: the
    app_id of the closing row), and which change LSNs bronze must hold: after the bootstrap
    snapshot; for a re-snapshot, what generation 0 read and what came after the re-snapshot
    (the purged gap between is the snapshot's); otherwise all."""
    kind = kind_plan.kind
    if kind.startswith("resnapshot"):
        resnaps = [f for f in facts if f.get("event") == "resnapshot"]
        gens = sorted({f["app_id"] for f in resnaps})
        if gens != [f"{APP_ID}.g1"]:
            found.add(f"re-snapshot rows of generations {gens}, want exactly [{APP_ID}.g1]")
        start = max((f["max_lsn"] for f in resnaps), default=None)
        _check_generation(found, data.generation, start)
        purged_after, last = data.purged_after or "", start or "~"
        return (
            start,
            {f["max_lsn"]: f["app_id"] for f in resnaps},
            lambda lsn: lsn <= purged_after or lsn > last,
        )
    if kind in ("stream", "switch") or not kind_plan.params.get("bootstrap", True):
        return None, {}, _everything
    boots = [f for f in facts if f.get("event") == "bootstrap" and f["app_id"] == APP_ID]
    if not boots:
        found.add("no bootstrap facts row: the snapshot never completed")
        start = max(snapshots, default=None)
        return start, {}, (lambda lsn: lsn > (start or ""))
    since = boots[0]["max_lsn"]
    return since, {since: APP_ID}, lambda lsn: lsn > since


def check(found: Findings, kind_plan: KindPlan, data: TrialData, workdir: Path) -> None:
    """Every promise the kind makes, checked on ``data``."""
    kind = kind_plan.kind
    final = data.states[-1]
    if not final.get("final"):
        found.add("the driver left no final state")
        return
    if kind == "database":
        check_database(found, data)
        return
    changes, snapshots = bronze_records(final["bronze"], data.columns)
    facts = final["facts"]
    history = data.history
    start, closing, expected = _start(found, kind_plan, data, facts, snapshots)
    checks.check_changes(found, changes, history, expected=expected)
    checks.check_batch_facts(found, changes, facts)

    # the snapshots: each whole and consistent; the ones the kind takes, and their facts rows
    chunked = any(f.get("event") == "snapshot_plan" for f in facts)
    for lsn, rows in sorted(snapshots.items()):
        ranges = None
        if chunked or any(r.chunk is not None for r in rows):
            ranges = checks.chunk_ranges(facts, lsn) or None
        checks.check_snapshot(found, rows, history, lsn=lsn, ranges=ranges)
    _check_snapshot_count(found, kind_plan, snapshots, data, start)
    checks.check_snapshot_facts(found, snapshots, facts, closing=closing)

    # downstream: the newest snapshot and the changes after it are the source table
    newest = _newest(snapshots, closing)
    base = snapshots.get(newest, []) if newest else []
    checks.check_table(
        found,
        {k: image for k, (image, _) in checks.rebuilt(base, changes, newest or "").items()},
        data.table,
        label="rebuilt bronze",
    )

    # the verdicts: never past what bronze held when they were read
    verdicts = []
    for state in data.states:
        verdict, _ = _control_state(state, final_bronze_name(workdir))
        held = {
            (r["_start_lsn"], r["_seqval"], r["_operation"], r["_command_id"])
            for r in state["bronze"]
            if r["_operation"] != 0
        }
        verdicts.append((verdict, held))
    checks.check_verdicts(found, verdicts, history, data.times, delivered=expected)

    if kind.startswith("silver"):
        _check_silver(found, kind_plan, data=data, base=base, since=newest or "", workdir=workdir)
    if kind == "switch":
        _check_switch(found, data, snapshots, facts)
    if kind == "seed":
        _check_seed(found, data, snapshots, start)


def check_database(found: Findings, data: TrialData) -> None:
    """The database kind, table by table (each finding names its table): bronze holds every
    change of the instance's history exactly once, with its values and instance, and no
    snapshot; the micro-batch facts rows of the table's sink id have distinct batch ids, each
    counting bronze's rows of its batch, summing to bronze's change rows; bronze rebuilt is the
    source table; one ``database_joined`` row and no ``database_left`` row. A ``table_parked``
    row is no broken promise (the next run retries the table; the final run caught it up or the
    checks above say so): it is noted."""
    final = data.states[-1]
    facts = final["facts"]
    held = final.get("tables") or {}
    sinks = {database_app_id(ci) for ci in data.tables}
    for ci, truth in data.tables.items():
        app = database_app_id(ci)
        own = Findings()
        changes, snapshots = bronze_records(held.get(ci, []), truth.columns)
        if snapshots:
            n = sum(len(rows) for rows in snapshots.values())
            own.add(f"{n} snapshot rows in bronze ({sorted(snapshots)}); the stream takes none")
        checks.check_changes(own, changes, truth.history)
        mine = [f for f in facts if f["app_id"] == app]
        checks.check_batch_facts(own, changes, mine)
        checks.check_batch_total(own, changes, mine)
        checks.check_table(
            own,
            {k: image for k, (image, _) in checks.rebuilt([], changes, "").items()},
            truth.table,
            label="rebuilt bronze",
        )
        events = collections.Counter(f.get("event") for f in mine)
        if events["database_joined"] != 1 or events["database_left"]:
            own.add(
                f"{events['database_joined']} database_joined and {events['database_left']} "
                "database_left rows (want 1 and 0)"
            )
        for f in mine:
            if f.get("event") == "table_parked":
                own.note(f"parked at its batch {f['batch_id']}: {str(f.get('detail'))[:400]}")
        found.absorb(own, f"{ci} ({app})")
    stray = sorted({f["app_id"] for f in facts} - sinks)
    if stray:
        found.add(f"facts rows of sink ids no table of the stream has: {stray}")


def final_bronze_name(workdir: Path) -> str:
    return str(workdir / "bronze")


def _everything(lsn: str) -> bool:
    return True


def _newest(
    snapshots: Mapping[str, Sequence[SnapshotRow]], closing: Mapping[str, str]
) -> str | None:
    """The snapshot downstream rebuilds from: the newest complete one (a chunked one only once
    its closing row exists)."""
    complete = [
        lsn
        for lsn, rows in snapshots.items()
        if all(r.chunk is None for r in rows) or lsn in closing
    ]
    complete += [lsn for lsn in closing if lsn not in snapshots]  # an empty table's snapshot
    return max(complete, default=None)


def check_snapshot_calls(
    found: Findings, calls: Sequence[Mapping[str, Any]], offsets: Sequence[str], n: int
) -> None:
    """The ``snapshot()`` calls' answers (``offsets``: the LSN each returned, in call order)
    against the ``n`` snapshots bronze holds (see :func:`_check_snapshot_count`)."""
    for i, (call, lsn) in enumerate(zip(calls, offsets, strict=False)):  # a call not done
        before = offsets[:i]
        if not before or lsn > max(before):
            continue
        if not call["resnapshot"] and lsn in before:
            continue  # a reuse call returns a snapshot the target holds
        if call["resnapshot"] and lsn == max(before):
            continue  # nothing captured since the newest snapshot: it is returned
        found.add(f"snapshot() call {i} returned {lsn}, older than the newest before it")
    least = len(set(offsets))
    planned = 1 + sum(1 for c in calls[1:] if c["resnapshot"])
    most = planned + sum(1 for c in calls if c["resnapshot"]) + 1  # a call rerun after a kill
    if not least <= n <= most:
        found.add(f"{n} snapshots for {len(calls)} snapshot() calls (want {least}-{most})")


def _check_snapshot_count(
    found: Findings,
    kind_plan: KindPlan,
    snapshots: Mapping[str, Sequence[SnapshotRow]],
    data: TrialData,
    start: str | None,
) -> None:
    """How many snapshots the kind takes: none for ``stream``, one switch snapshot, one
    bootstrap, seed or re-snapshot, one per ``snapshot()`` call that read (calls reading again
    after a kill included), and the stream starting after the newest.

    A ``snapshot(resnapshot=True)`` call reads unless CDC has captured nothing since the
    target's newest snapshot (a quiet table, or a stopped capture job): then it returns that
    snapshot. So each call returns a newer LSN than every call before it or, when it reused,
    the newest one; bronze holds one snapshot per distinct LSN returned, plus any a killed call
    took before its rerun."""
    kind = kind_plan.kind
    n = len(snapshots)
    if kind == "snapshot":
        calls = kind_plan.params["calls"]
        offsets = [o["lsn"] for o in data.progress.get("snapshots", [])]
        check_snapshot_calls(found, calls, offsets, n)
        unknown = [o for o in offsets if o not in snapshots]
        if unknown:
            found.add(f"snapshot() returned offsets bronze holds no snapshot at: {unknown}")
        if start is not None and snapshots and start != max(snapshots):
            found.add(f"to_delta started after snapshot {start}, not the newest {max(snapshots)}")
        events = [
            v
            for commit in data.bronze_log
            for app, v in commit["txns"]
            if app == f"{APP_ID}#events"
        ]
        checks.check_txn_versions(found, events, app_id=f"{APP_ID}#events", want=n)
        return
    want = (
        0
        if kind == "stream" or (kind.startswith("silver") and not kind_plan.params.get("bootstrap"))
        else 1
    )
    if n != want:
        found.add(f"{n} snapshots in bronze ({sorted(snapshots)}), want {want}")


def _check_generation(
    found: Findings, generation: dict[str, Any] | None, start: str | None
) -> None:
    """The generation file after the re-snapshot: generation 1 at its snapshot, no recovery
    left half done."""
    if generation is None:
        found.add("no generation file after the re-snapshot")
        return
    got = (generation.get("generation"), generation.get("snapshot_lsn"), "recovering" in generation)
    if got != (1, start, False):
        found.add(
            f"generation file (generation, snapshot_lsn, recovering) {got}, want "
            f"(1, {start}, False)"
        )


def _check_switch(
    found: Findings,
    data: TrialData,
    snapshots: Mapping[str, Sequence[SnapshotRow]],
    facts: Sequence[Mapping[str, Any]],
) -> None:
    """One switch snapshot: one bronze commit saying ``switch_snapshot`` under
    ``<app_id>#switch`` with the switching batch's id, which the batch's
    ``capture_instance_switched`` row names."""
    commits = [c for c in data.bronze_log if '"switch_snapshot"' in (c["userMetadata"] or "")]
    switched = [f for f in facts if f.get("event") == "capture_instance_switched"]
    if len(switched) != 1:
        found.add(f"{len(switched)} capture_instance_switched facts rows (want 1)")
    if len(commits) != 1:
        found.add(f"{len(commits)} switch_snapshot commits in bronze (want 1)")
        return
    txns = commits[0]["txns"]
    want = [(f"{APP_ID}#switch", switched[0]["batch_id"])] if switched else None
    if want is not None and txns != want:
        found.add(f"the switch snapshot's commit carries {txns}, want {want}")
    with_note = [r for rows in snapshots.values() for r in rows if len(r.image) < 4]
    if with_note:
        found.add("switch snapshot rows without the new column")


def _check_seed(
    found: Findings,
    data: TrialData,
    snapshots: Mapping[str, Sequence[SnapshotRow]],
    start: str | None,
) -> None:
    """The seed's rows are the copy, at the position ``seed()`` returned."""
    copy = data.seed_copy or {}
    offset = (data.progress.get("seed") or {}).get("lsn")
    if offset is not None and offset != start:
        found.add(f"seed() returned {offset}, the bootstrap row says {start}")
    if copy.get("mode") == "lsn" and start != copy.get("as_of"):
        found.add(f"the seed is at {start}, the copy's as_of LSN is {copy.get('as_of')}")
    got = sorted(r.image for r in snapshots.get(start or "", []))
    want = sorted(tuple(r) for r in copy.get("rows", []))
    if got != want:
        found.add(f"the seed's {len(got)} rows are not the copy's {len(want)}")


def _check_silver(
    found: Findings,
    kind_plan: KindPlan,
    *,
    data: TrialData,
    base: Sequence[SnapshotRow],
    since: str,
    workdir: Path,
) -> None:
    """Silver against the committed transactions after the snapshot it was built from: type 1
    the rebuilt table (and each row's ``_start_lsn``), type 2 one version per commit that
    changed a key; its position at bronze's end; its verdict never past its position."""
    final = data.states[-1]
    rows = final.get("silver") or []
    columns = data.columns
    history_after = [c for c in data.history if c.lsn > since]
    if kind_plan.kind == "silver_type1":
        silver = [(tuple(r[c] for c in columns), r["_start_lsn"]) for r in rows]
        checks.check_silver_type1(found, silver, checks.rebuilt(base, history_after, since))
    else:
        silver_versions = [
            Version(
                tuple(r[c] for c in columns),
                r["_start_lsn"],
                r["_end_lsn"],
                _ts(r["__START_AT"]),
                _ts(r["__END_AT"]),
            )
            for r in rows
        ]
        want = checks.scd2_versions(base, history_after)
        times = {lsn: t.replace(tzinfo=None) for lsn, t in data.times.items()}
        checks.check_silver_type2(found, silver_versions, want, times)
        current = {v.key: v.image for v in silver_versions if v.end is None}
        checks.check_table(found, current, data.table, label="silver current versions")
    silver_name = str(workdir / "silver")
    last = max((c.lsn for c in history_after), default=since or None)
    _, applied = _control_state(final, silver_name)
    if applied != last:
        found.add(f"silver's applied_lsn {applied} is not bronze's last change {last}")
    states = []
    for state in data.states:
        verdict, position = _control_state(state, silver_name)
        held = {c.ident for c in data.history if position is not None and c.lsn <= position}
        states.append((verdict, held))
    checks.check_verdicts(
        found,
        states,
        data.history,
        data.times,
        delivered=lambda lsn: lsn > since,
        label="silver",
    )
