"""The Spark 4.0/4.1 reader (zero-argument latestOffset, no admission control) reads exact
change history. PySpark 4.0/4.1 pick it by themselves (`make test-spark40`, `test-spark41`);
4.2 still runs such readers, so the legacy class is registered explicitly to exercise it on
every minor (ADR 0006, 0055)."""

from __future__ import annotations

import logging

from test_stream_spark import COLUMNS, read_rows, workload

import mssql_cdc


def _register_legacy(spark, log_file) -> None:
    from mssql_cdc.source.datasource import LegacyStreamReader, MssqlCdcDataSource

    cores = int(spark.sparkContext.defaultParallelism)

    class Legacy(MssqlCdcDataSource):
        default_num_partitions = cores

        def streamReader(self, schema):  # noqa: N802 (Spark API)
            # the driver's streaming Python worker logs the reader's WARNING into log_file
            logger = logging.getLogger("mssql_cdc.source")
            if not any(getattr(h, "baseFilename", "") == str(log_file) for h in logger.handlers):
                logger.addHandler(logging.FileHandler(log_file))
            return LegacyStreamReader(self._options(), schema, self._partitions())

    spark.dataSource.register(Legacy)


def test_the_legacy_reader_reads_the_history_and_resumes(spark, source, tmp_path):
    log_file = tmp_path / "reader.log"
    _register_legacy(spark, log_file)
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
        # ... and says so once per query
        ignored = "maxCommitsPerBatch=1 has no effect on Spark "
        assert len([ln for ln in log_file.read_text().splitlines() if ignored in ln]) == 1
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
        assert len([ln for ln in log_file.read_text().splitlines() if ignored in ln]) == 2
    finally:
        mssql_cdc.register(spark)  # the normal registration again for later tests
