"""``txn_ids._surely_missing_locally``: a missing ``_delta_log`` is answered without Spark only
where the driver's own file system is the one Spark reads (no Java stack traces from Spark's
listing of a missing directory); everywhere else Spark is asked."""

from __future__ import annotations

import types

from mssql_cdc.sink.txn_ids import _surely_missing_locally, list_log


def _classic(default_fs: str | None) -> object:
    conf = types.SimpleNamespace(get=lambda key: default_fs if key == "fs.defaultFS" else None)
    return types.SimpleNamespace(_jsc=types.SimpleNamespace(hadoopConfiguration=lambda: conf))


def test_a_missing_local_directory_is_known_without_spark(tmp_path):
    spark = _classic("file:///")
    missing = str(tmp_path / "t" / "_delta_log")
    assert _surely_missing_locally(spark, missing)
    assert _surely_missing_locally(spark, "file:" + missing)
    assert _surely_missing_locally(_classic(None), missing)  # Hadoop's default is local
    # list_log answers empty without touching the session (the fake has no reader)
    assert list_log(spark, str(tmp_path / "t")).empty  # type: ignore[arg-type]


def test_spark_is_asked_everywhere_else(tmp_path):
    (tmp_path / "_delta_log").mkdir()
    assert not _surely_missing_locally(_classic("file:///"), str(tmp_path / "_delta_log"))
    # paths without a scheme on a platform whose default file system is not local (Databricks)
    assert not _surely_missing_locally(_classic("dbfs:/"), "/mnt/none/_delta_log")
    for other in ("abfss://c@a.dfs.core.windows.net/t/_delta_log", "dbfs:/none/_delta_log"):
        assert not _surely_missing_locally(_classic("file:///"), other)
    # a relative path: the JVM resolves it against its own working directory
    assert not _surely_missing_locally(_classic("file:///"), "none-here/_delta_log")
    # Spark Connect: no JVM in this process, the paths are the server's
    assert not _surely_missing_locally(types.SimpleNamespace(), "/none/_delta_log")

    class Refusing:  # a platform that refuses the JVM call
        class _jsc:  # noqa: N801
            @staticmethod
            def hadoopConfiguration():  # noqa: N802
                raise RuntimeError("py4j.security.Py4JSecurityException")

    assert not _surely_missing_locally(Refusing(), "/none/_delta_log")
