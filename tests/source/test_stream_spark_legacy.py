"""The Spark 4.0/4.1 reader (zero-argument latestOffset, no admission control) reads exact
change history. Only PySpark 4.2 is installed here; 4.2 still runs such readers, so the legacy
class is registered explicitly and exercised on it (ADR 0006)."""

from __future__ import annotations

from test_stream_spark import COLUMNS, read_rows, workload

import mssql_cdc


def _register_legacy(spark) -> None:
    from mssql_cdc.source.datasource import LegacyStreamReader, MssqlCdcDataSource

    cores = int(spark.sparkContext.defaultParallelism)

    class Legacy(MssqlCdcDataSource):
        default_num_partitions = cores

        def streamReader(self, schema):  # noqa: N802 (Spark API)
            return LegacyStreamReader(self._options(), schema, self._partitions())

    spark.dataSource.register(Legacy)


def test_the_legacy_reader_reads_the_history_and_resumes(spark, source, tmp_path):
    _register_legacy(spark)
    try:

        def run():
            options = source.options(maxCommitsPerBatch="1")  # the legacy reader ignores it
            df = spark.readStream.format("mssql_cdc").options(**options).load()
            query = (
                df.writeStream.format("parquet")
                .option("path", str(tmp_path / "out"))
                .option("checkpointLocation", str(tmp_path / "cp"))
                .trigger(availableNow=True)
                .start()
            )
            query.awaitTermination()
            return query

        workload(source, 1)
        source.scan()
        query = run()
        # Without admission control every batch reads up to max_lsn: one batch for all the
        # commits (the 4.2 reader would make one per commit here).
        assert len([p for p in query.recentProgress if p["numInputRows"]]) == 1
        assert [tuple(r[c] for c in COLUMNS) for r in read_rows(spark, tmp_path / "out")] == (
            source.changes()
        )
        # a second run resumes from the checkpoint with only the new commits
        workload(source, 100)
        source.scan()
        run()
        assert [tuple(r[c] for c in COLUMNS) for r in read_rows(spark, tmp_path / "out")] == (
            source.changes()
        )
    finally:
        mssql_cdc.register(spark)  # the normal registration again for later tests
