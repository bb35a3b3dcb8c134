"""``reconcile()``: compare a silver table with its SQL Server table (docs/validation.md).

Order of reads, each before the next: silver's ``applied_lsn`` (E) from the control table, then
silver's newest Delta version; ``max_lsn`` (M) then the server's counts (tier 1); ``max_lsn``
again then the rows of the buckets tier 2 compares; then the keys with changes not yet applied
(bronze's change rows after ``min(M, E)``, and the change tables' rows after bronze's newest
LSN up to ``max_lsn`` read then). A difference on such a key is ``IN_FLIGHT``, not a mismatch.

Nothing is written to SQL Server; its reads run under ``READ COMMITTED`` or ``SNAPSHOT``
(``isolationLevel``), never NOLOCK (``mssql_cdc.source.tallies``, the snapshot reader).
"""

from __future__ import annotations

import json
import logging
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from decimal import Decimal
from functools import reduce
from typing import TYPE_CHECKING, Any, ClassVar

from mssql_cdc.options import parse_options, snapshot_read_options
from mssql_cdc.sink import (
    TableRef,
    append_report,
    bronze_change_keys,
    bronze_position,
    quote,
    read_silver_position,
    report_frame,
    silver_current_rows,
    silver_version,
    table_ref,
)
from mssql_cdc.source import open_tallies, register
from mssql_cdc.types import ResultMapping
from mssql_cdc.validate.buckets import (
    Bucket,
    Grid,
    bound_json,
    bucket_of,
    check_arguments,
    check_keys,
    grid,
    key_json,
    key_kind,
    key_unit,
    merge,
    sampled,
    unit_value,
)
from mssql_cdc.validate.chunk_checks import CHUNK_FAILURES, ChunkFailure, check_chunks

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

    from mssql_cdc.source import SourceTallies

__all__ = ["CHUNK_FAILURES", "FAILURE_TYPES", "STATUSES", "ReconcileResult", "reconcile"]

log = logging.getLogger("mssql_cdc.reconcile")

#: bucket statuses, best first
STATUSES = ("MATCH", "IN_FLIGHT", "MISMATCH")
#: the failure types of key rows
FAILURE_TYPES = ("MISSING_TARGET", "MISSING_SOURCE", "RECORD_DIFF", "IN_FLIGHT")
_ZERO_LSN = "0x" + "0" * 20


@dataclass(frozen=True)
class ReconcileResult(ResultMapping):
    """What one ``reconcile()`` run found (the report table holds the same rows); also a
    read-only mapping of these names (``result["mismatch"]``, ``dict(result)``).

    Attributes:
        run_id: UUID of the run (``run_id`` of its report rows).
        silver_version: the Delta version of silver compared.
        silver_lsn: silver's ``applied_lsn`` read before that version (``None``: no control row).
        source_lsn: ``sys.fn_cdc_get_max_lsn()`` read before the server's counts.
        buckets: buckets compared.
        match: buckets with status ``MATCH``.
        in_flight: buckets with status ``IN_FLIGHT``.
        mismatch: buckets with status ``MISMATCH``.
        hashed: buckets whose rows were compared by hash (tier 2).
        failures: key and chunk rows per ``failure_type`` (:data:`FAILURE_TYPES`,
            :data:`CHUNK_FAILURES`).
        report: the report rows (bucket rows, then key rows, then chunk rows) as a DataFrame.
        chunk_snapshot: the LSN of the chunked snapshot whose chunks were checked
            (``None``: no ``facts_table``, or bronze has no chunked snapshot).
    """

    _KEYS: ClassVar[tuple[str, ...]] = (
        "run_id",
        "silver_version",
        "silver_lsn",
        "source_lsn",
        "buckets",
        "match",
        "in_flight",
        "mismatch",
        "hashed",
        "failures",
        "report",
        "chunk_snapshot",
    )

    run_id: str
    silver_version: int
    silver_lsn: str | None
    source_lsn: str | None
    buckets: int
    match: int
    in_flight: int
    mismatch: int
    hashed: int
    failures: dict[str, int] = field(default_factory=dict)
    report: DataFrame | None = None
    chunk_snapshot: str | None = None


@dataclass(frozen=True)
class _Difference:
    bucket: int
    key: tuple[object, ...]
    failure: str
    silver_start_lsn: str | None
    columns: tuple[str, ...]


@dataclass
class _Tally:
    source_rows: int = 0
    source_sum: Decimal | None = Decimal(0)
    silver_rows: int = 0
    silver_sum: Decimal | None = Decimal(0)

    @property
    def equal(self) -> bool:
        return self.source_rows == self.silver_rows and self.source_sum == self.silver_sum


def reconcile(
    spark: SparkSession,
    options: Mapping[str, str],
    silver: str,
    *,
    keys: Sequence[str] | None = None,
    bronze: str,
    control_table: str,
    facts_table: str | None = None,
    bucket_rows: int = 1_000_000,
    sample: float = 0.01,
    report_table: str | None = None,
    seed: int | None = None,
) -> ReconcileResult:
    """Compares ``silver`` with its SQL Server table (docs/validation.md).

    Args:
        spark: the session.
        options: the stream's source options (connection, ``captureInstance``, ...).
        silver: the silver table (name or path); a type 2 table is compared by its current
            rows (``__END_AT IS NULL``).
        keys: the columns identifying a row (default: the capture instance's unique index).
        bronze: the bronze table silver is applied from.
        control_table: the control table holding silver's ``applied_lsn``.
        facts_table: the stream's facts table: with it, the newest chunked snapshot of bronze
            is checked against bronze first (``CHUNK_*`` rows; ``validate.chunk_checks``).
        bucket_rows: source rows per bucket (>= 1).
        sample: fraction of matching buckets also compared row by row (0 to 1).
        report_table: a Delta table the report rows are appended to (created on first use).
        seed: seed of the sample's random choice (``None``: a new choice each run).

    Raises:
        ValueError: a bad argument (named with its allowed values), ``keys`` not captured
            columns, silver missing or lacking a key column.
    """
    check_arguments(bucket_rows, sample, seed)
    if not isinstance(options, Mapping):
        raise TypeError(f"options must be a mapping of source options, got {type(options)}")
    raw = {str(k): str(v) for k, v in options.items()}
    parsed = parse_options(raw)
    silver_ref = table_ref(silver, "silver")
    bronze_ref = table_ref(bronze, "bronze")
    control_ref = table_ref(control_table, "control_table")
    facts_ref = None if facts_table is None else table_ref(facts_table, "facts_table")
    report_ref = None if report_table is None else table_ref(report_table, "report_table")
    if not silver_ref.exists(spark):
        raise ValueError(f"silver {silver!r} does not exist; run apply_changes first")
    run_id = str(uuid.uuid4())
    run_at = datetime.now(timezone.utc).replace(tzinfo=None)
    chunked, chunk_found = (
        (None, []) if facts_ref is None else check_chunks(spark, facts_ref, bronze_ref)
    )
    register(spark)
    tallies = open_tallies(parsed)
    try:
        run = _Run(
            spark,
            raw,
            tallies,
            silver=silver_ref,
            bronze=bronze_ref,
            control=control_ref,
            keys=keys,
        )
        result = run.compare(
            run_id, run_at, bucket_rows, sample, seed, chunks=(chunked, chunk_found)
        )
    finally:
        tallies.close()
    if report_ref is not None:
        assert result.report is not None
        append_report(spark, report_ref, result.report)
    log.info(
        "reconcile %s (%s): %d buckets, %d MATCH, %d IN_FLIGHT, %d MISMATCH, %d hashed; %s",
        silver_ref.text,
        run_id,
        result.buckets,
        result.match,
        result.in_flight,
        result.mismatch,
        result.hashed,
        dict(result.failures) or "no differing keys",
    )
    return result


class _Run:
    """One comparison: the reads in the module doc's order."""

    def __init__(
        self,
        spark: SparkSession,
        raw: dict[str, str],
        tallies: SourceTallies,
        *,
        silver: TableRef,
        bronze: TableRef,
        control: TableRef,
        keys: Sequence[str] | None,
    ) -> None:
        self.spark, self.raw, self.tallies = spark, raw, tallies
        self.silver, self.bronze = silver, bronze
        instance = tallies.instance
        captured = tallies.captured_columns()
        names = [c.name for c in captured]
        if keys is None:
            if not instance.index_columns:
                raise ValueError(
                    f"keys: capture instance {instance.name!r} has no unique index; pass keys= "
                    f"naming the columns that identify a row (of {names})"
                )
            keys = instance.index_columns
        self.keys = check_keys(keys, names, instance.name)
        types = {c.name: c.data_type for c in captured}
        self.kind = key_kind([types[k] for k in self.keys])
        position = read_silver_position(spark, control, silver.text)
        self.silver_lsn = None if position is None else position.applied_lsn
        self.version = silver_version(spark, silver)
        self.current = silver_current_rows(spark, silver, self.version)
        absent = [k for k in self.keys if k not in self.current.columns]
        if absent:
            raise ValueError(
                f"silver {silver.text!r} has no key column {absent}; keys must name columns "
                "of both the capture instance and silver"
            )
        computed = tallies.computed_columns()
        self.grid: Grid | None = None
        self.buckets: list[Bucket] = []
        self.compared = [n for n in names if n in self.current.columns and n not in computed]

    # --- tier 1 ---

    def _unit(self, column: Column) -> Column:
        from pyspark.sql import functions as sf

        if self.kind == "date":
            return sf.datediff(column, sf.to_date(sf.lit("1970-01-01"))).cast("bigint")
        return column.cast("bigint")

    @staticmethod
    def _fine(g: Grid) -> Column:
        """Spark's twin of the server's fine bucket of column ``u``, clamped into the grid
        (NULL: 0); ``div`` is exact integer division."""
        from pyspark.sql import functions as sf

        top = g.start(g.count - 1)
        return sf.coalesce(
            sf.expr(f"(least(greatest(u, {g.lo}L), {top}L) - {g.lo}L) div {g.width}L"),
            sf.lit(0).cast("bigint"),
        )

    def tier1(self, bucket_rows: int) -> tuple[Grid | None, list[Bucket], list[_Tally]]:
        from pyspark.sql import functions as sf

        if self.kind is None:
            tally = _Tally(self.tallies.rows(), None, self.current.count(), None)
            return None, [Bucket(0, 0, 1, None, None)], [tally]
        key = self.keys[0]
        lo, hi = self.tallies.span(key, self.kind)
        if lo is not None and hi is not None and hi - lo > 2**62:
            log.warning("reconcile: key %s spans more than 2^62; compared whole-table", key)
            self.kind = None
            return self.tier1(bucket_rows)
        g = grid(lo, hi)
        server: dict[int, tuple[int, Decimal]] = {}
        if lo is not None:
            for fine, (n, s) in self.tallies.fine_tallies(key, self.kind, g.lo, g.width).items():
                f = 0 if fine is None else fine
                old = server.get(f, (0, Decimal(0)))
                server[f] = (old[0] + n, old[1] + s)
        buckets = merge(g, {f: n for f, (n, _) in server.items()}, bucket_rows)
        unit = self._unit(sf.col(quote(key)))
        silver_rows = (
            self.current.select(unit.alias("u"))
            .select(self._fine(g).alias("f"), "u")
            .groupBy("f")
            .agg(
                sf.count(sf.lit(1)).alias("n"),
                sf.sum(sf.col("u").cast("decimal(38,0)")).alias("s"),
            )
            .collect()
        )
        out = [_Tally() for _ in buckets]
        for f, (n, s) in server.items():
            t = out[bucket_of(buckets, f)]
            t.source_rows += n
            t.source_sum = (t.source_sum or Decimal(0)) + s
        for row in silver_rows:
            t = out[bucket_of(buckets, int(row["f"]))]
            t.silver_rows += int(row["n"])
            t.silver_sum = (t.silver_sum or Decimal(0)) + (row["s"] or Decimal(0))
        return g, buckets, out

    # --- tier 2 ---

    def _in_buckets(self, chosen: Sequence[Bucket]) -> Column | None:
        """Silver rows of the chosen buckets (``None``: every row)."""
        from pyspark.sql import functions as sf

        if self.kind is None:
            return None
        unit = self._unit(sf.col(quote(self.keys[0])))
        conditions = []
        for b in chosen:
            parts = []
            if b.lo is not None:
                parts.append(unit >= sf.lit(b.lo))
            if b.hi is not None:
                parts.append(unit < sf.lit(b.hi))
            cond = reduce(lambda a, c: a & c, parts) if parts else sf.lit(True)
            if b.lo is None:
                cond = cond | unit.isNull()
            conditions.append(cond)
        return reduce(lambda a, c: a | c, conditions)

    def _source_rows(self, chosen: Sequence[Bucket]) -> DataFrame:
        opts = snapshot_read_options(self.raw)
        opts["snapshotKeys"] = json.dumps(list(self.keys))
        if self.kind is not None:
            kind = self.kind
            chunks = [
                [
                    b.index,
                    None if b.lo is None else unit_value(b.lo, kind),
                    None if b.hi is None else unit_value(b.hi, kind),
                ]
                for b in chosen
            ]
            opts["snapshotChunks"] = json.dumps(chunks)
        return self.spark.read.format("mssql_cdc_snapshot").options(**opts).load()

    def tier2(self, chosen: Sequence[Bucket]) -> list[_Difference]:
        from pyspark.sql import functions as sf

        from mssql_cdc.validate.row_hash import canonical_text, row_hash

        if not chosen:
            return []
        types = {f.name: f.dataType for f in self.current.schema.fields}
        cols = self.compared
        source = self._source_rows(chosen)
        s_side = source.select(
            *[sf.col(quote(c)).cast(types[c]).alias(f"s{i}") for i, c in enumerate(cols)],
            sf.lit(True).alias("s_here"),
        )
        current = self.current
        where = self._in_buckets(chosen)
        if where is not None:
            current = current.where(where)
        start = sf.col("_start_lsn") if "_start_lsn" in current.columns else sf.lit(None)
        t_side = current.select(
            *[sf.col(quote(c)).alias(f"t{i}") for i, c in enumerate(cols)],
            start.cast("string").alias("t_start"),
            sf.lit(True).alias("t_here"),
        )
        index = {c: i for i, c in enumerate(cols)}
        on = reduce(
            lambda a, c: a & c,
            [sf.col(f"s{index[k]}").eqNullSafe(sf.col(f"t{index[k]}")) for k in self.keys],
        )
        joined = s_side.join(t_side, on, "full_outer")
        s_hash = row_hash([(sf.col(f"s{i}"), types[c]) for i, c in enumerate(cols)])
        t_hash = row_hash([(sf.col(f"t{i}"), types[c]) for i, c in enumerate(cols)])
        differing = sf.array_compact(
            sf.array(
                *[
                    sf.when(
                        ~canonical_text(sf.col(f"s{i}"), types[c]).eqNullSafe(
                            canonical_text(sf.col(f"t{i}"), types[c])
                        ),
                        sf.lit(c),
                    )
                    for i, c in enumerate(cols)
                ]
            )
        )
        failure = (
            sf.when(sf.col("t_here").isNull(), sf.lit("MISSING_TARGET"))
            .when(sf.col("s_here").isNull(), sf.lit("MISSING_SOURCE"))
            .when(s_hash != t_hash, sf.lit("RECORD_DIFF"))
        )
        keys_out = [
            sf.coalesce(sf.col(f"s{index[k]}"), sf.col(f"t{index[k]}")).alias(f"k{j}")
            for j, k in enumerate(self.keys)
        ]
        rows = (
            joined.select(*keys_out, failure.alias("failure"), "t_start", differing.alias("cols"))
            .where(sf.col("failure").isNotNull())
            .collect()
        )
        out = []
        for r in rows:
            key = tuple(r[f"k{j}"] for j in range(len(self.keys)))
            out.append(
                _Difference(
                    self._bucket_of_key(key),
                    key,
                    str(r["failure"]),
                    r["t_start"],
                    tuple(r["cols"]) if r["failure"] == "RECORD_DIFF" else (),
                )
            )
        return out

    def _bucket_of_key(self, key: tuple[object, ...]) -> int:
        if self.kind is None or self.grid is None:
            return 0
        return bucket_of(self.buckets, self.grid.fine(key_unit(key[0], self.kind)))

    # --- in flight ---

    def in_flight(self, source_lsn: str | None) -> set[tuple[object, ...]]:
        """Keys with changes silver has not applied: in bronze after ``min(M, E)``, or in the
        change tables after bronze's newest LSN (up to ``max_lsn`` now)."""
        lsns = [x for x in (source_lsn, self.silver_lsn) if x is not None]
        after = min(lsns) if self.silver_lsn is not None else None
        keys = set(bronze_change_keys(self.spark, self.bronze, self.keys, after))
        upto = self.tallies.max_lsn()
        if upto is not None:
            since = bronze_position(self.spark, self.bronze) or _ZERO_LSN
            if since < upto:
                keys.update(self.tallies.changed_keys(self.keys, since, upto))
        return keys

    # --- the whole run ---

    def compare(
        self,
        run_id: str,
        run_at: datetime,
        bucket_rows: int,
        sample: float,
        seed: int | None,
        *,
        chunks: tuple[str | None, Sequence[ChunkFailure]],
    ) -> ReconcileResult:
        source_lsn = self.tallies.max_lsn()
        g, buckets, tallied = self.tier1(bucket_rows)
        self.grid, self.buckets = g, buckets
        unequal = [b.index for b, t in zip(buckets, tallied, strict=True) if not t.equal]
        chosen_ix = set(unequal) | sampled(
            [b.index for b in buckets if b.index not in set(unequal)], sample, seed
        )
        chosen = [b for b in buckets if b.index in chosen_ix]
        rows_lsn = self.tallies.max_lsn() if chosen else None
        differences = self.tier2(chosen)
        flight = self.in_flight(source_lsn) if (differences or unequal) else set()
        flight_buckets = {self._bucket_of_key(k) for k in flight}
        statuses = []
        for b, t in zip(buckets, tallied, strict=True):
            mine = [d for d in differences if d.bucket == b.index]
            real = [d for d in mine if d.key not in flight]
            if real:
                status = "MISMATCH"
            elif mine or not t.equal:
                status = "IN_FLIGHT" if (mine or b.index in flight_buckets) else "MISMATCH"
            else:
                status = "MATCH"
            statuses.append(status)
        report_rows = self._report_rows(
            run_id=run_id,
            run_at=run_at,
            source_lsn=source_lsn,
            rows_lsn=rows_lsn,
            found=_Found(buckets, tallied, statuses, chosen_ix, differences, flight),
        )
        report_rows += self._chunk_rows(run_id, run_at, *chunks)
        counts = Counter(statuses)
        failures = Counter(r[15] for r in report_rows if r[15] is not None)
        report = report_frame(self.spark, report_rows)
        return ReconcileResult(
            run_id=run_id,
            silver_version=self.version,
            silver_lsn=self.silver_lsn,
            source_lsn=source_lsn,
            buckets=len(buckets),
            match=counts["MATCH"],
            in_flight=counts["IN_FLIGHT"],
            mismatch=counts["MISMATCH"],
            hashed=len(chosen_ix),
            failures=dict(failures),
            report=report,
            chunk_snapshot=chunks[0],
        )

    def _chunk_rows(
        self,
        run_id: str,
        run_at: datetime,
        snapshot: str | None,
        failures: Sequence[ChunkFailure],
    ) -> list[tuple[Any, ...]]:
        """The report's chunk rows: bounds, failure type and ``detail`` (snapshot, chunk,
        what was found); no LSN, counts or status."""
        head = (run_id, run_at, self.silver.text, self.version, self.silver_lsn)
        return [
            _failure_row(
                head,
                None,
                None if f.lo is None else json.dumps(f.lo, default=str),
                None if f.hi is None else json.dumps(f.hi, default=str),
                None,
                f.failure,
                json.dumps({"snapshot": snapshot, "chunk": f.chunk, **f.found}, default=str),
            )
            for f in failures
        ]

    def _report_rows(
        self,
        *,
        run_id: str,
        run_at: datetime,
        source_lsn: str | None,
        rows_lsn: str | None,
        found: _Found,
    ) -> list[tuple[Any, ...]]:
        buckets, tallied, statuses = found.buckets, found.tallied, found.statuses
        chosen, differences, flight = found.chosen, found.differences, found.flight
        head = (run_id, run_at, self.silver.text, self.version, self.silver_lsn)
        out: list[tuple[Any, ...]] = []
        for b, t, status in zip(buckets, tallied, statuses, strict=True):
            out.append(
                (
                    *head,
                    source_lsn,
                    bound_json(b.lo, self.kind),
                    bound_json(b.hi, self.kind),
                    t.source_rows,
                    t.source_sum,
                    t.silver_rows,
                    t.silver_sum,
                    status,
                    b.index in chosen,
                    None,
                    None,
                    None,
                )
            )
        for d in sorted(differences, key=lambda d: (d.bucket, repr(d.key))):
            b = buckets[d.bucket]
            detail: dict[str, object] = {
                "silver_start_lsn": d.silver_start_lsn,
                "columns": list(d.columns),
            }
            failure = d.failure
            if d.key in flight:
                detail["found"] = failure
                failure = "IN_FLIGHT"
            out.append(
                _failure_row(
                    head,
                    rows_lsn,
                    bound_json(b.lo, self.kind),
                    bound_json(b.hi, self.kind),
                    key_json(self.keys, d.key),
                    failure,
                    json.dumps(detail),
                )
            )
        return out


@dataclass(frozen=True)
class _Found:
    """What a run found, per bucket (``buckets``, their ``tallied`` sums and ``statuses``),
    the buckets whose rows were compared (``chosen``), the rows that differ, and the keys of
    transactions in flight."""

    buckets: Sequence[Bucket]
    tallied: Sequence[_Tally]
    statuses: Sequence[str]
    chosen: set[int]
    differences: Sequence[_Difference]
    flight: set[tuple[object, ...]]


def _failure_row(  # noqa: PLR0917 (one report row's columns, in order)
    head: tuple[Any, ...],
    source_lsn: str | None,
    lo: str | None,
    hi: str | None,
    key: str | None,
    failure: str,
    detail: str,
) -> tuple[Any, ...]:
    """A key or chunk row of the report: ``head`` (run, silver), the LSN and bounds, no counts,
    status or hash flag, then the key, failure type and detail."""
    return (*head, source_lsn, lo, hi, None, None, None, None, None, None, key, failure, detail)
