"""The pipeline the waves tests drive: a stream with a chunked bootstrap into bronze, one
backfill wave at a time, and ``apply_changes`` into a type 1 and a type 2 silver table."""

from __future__ import annotations

from typing import Any

from mssql_cdc import apply_changes, stream


class WavesPipe:
    """``run()`` streams (opening the chunked snapshot the first time), ``wave()`` reads one
    backfill wave of ``chunk_rows``-row chunks, ``apply(scd)`` applies bronze to silver."""

    def __init__(
        self,
        spark: Any,
        source: Any,
        tmp_path: Any,
        *,
        app_id: str,
        instance: str,
        keys: list[str],
        chunk_rows: int,
    ) -> None:
        self.spark, self.source, self.tmp = spark, source, tmp_path
        self.app_id, self.instance, self.keys, self.chunk_rows = app_id, instance, keys, chunk_rows
        self.bronze, self.facts = str(tmp_path / "bronze"), str(tmp_path / "facts")
        self.control = str(tmp_path / "control")
        self.cdc = stream(spark, source.options())

    def run(self) -> None:
        self.source.scan()
        self.cdc.to_delta(
            self.bronze,
            app_id=self.app_id,
            checkpoint=str(self.tmp / "cp"),
            facts_table=self.facts,
            trigger={"availableNow": True},
            bootstrap=True,
            snapshot="chunked",
        ).awaitTermination()

    def wave(self) -> Any:
        return self.cdc.backfill(
            self.bronze,
            app_id=self.app_id,
            facts_table=self.facts,
            chunk_rows=self.chunk_rows,
            max_waves=1,
            target_wave_seconds=0,
        )

    def silver(self, scd: int) -> str:
        return str(self.tmp / f"silver{scd}")

    def apply(self, scd: int) -> Any:
        return apply_changes(
            self.spark,
            self.bronze,
            self.silver(scd),
            capture_instance=self.instance,
            keys=self.keys,
            control_table=self.control,
            facts_table=self.facts,
            scd_type=scd,
        )
