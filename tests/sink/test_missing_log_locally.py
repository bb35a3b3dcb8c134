"""``txn_ids._surely_missing_locally``: a missing ``_delta_log`` is answered without a Spark
listing only where Spark's own Hadoop file system, resolved with the session's configuration,
is the local one and says the directory does not exist; everywhere else Spark is asked."""

from __future__ import annotations

import types

from mssql_cdc.sink.txn_ids import _surely_missing_locally, list_log


class _FileSystem:
    def __init__(self, scheme: str, present: set[str]) -> None:
        self.scheme, self.present = scheme, present

    def getScheme(self) -> str:  # noqa: N802 (Hadoop's name)
        return self.scheme

    def exists(self, path: _Path) -> bool:
        return path.text in self.present


class _Path:
    def __init__(self, text: str) -> None:
        self.text = text

    def getFileSystem(self, conf: object) -> _FileSystem:  # noqa: N802 (Hadoop's name)
        assert conf == "session hadoop conf"  # the session's, with its fs.defaultFS
        return _FileSystem(self.scheme, self.present)


def _classic(scheme: str = "file", present: frozenset[str] = frozenset()) -> object:
    path_class = type("P", (_Path,), {"scheme": scheme, "present": set(present)})
    jvm = types.SimpleNamespace(
        org=types.SimpleNamespace(
            apache=types.SimpleNamespace(
                hadoop=types.SimpleNamespace(fs=types.SimpleNamespace(Path=path_class))
            )
        )
    )
    state = types.SimpleNamespace(newHadoopConf=lambda: "session hadoop conf")
    session = types.SimpleNamespace(sessionState=lambda: state)
    return types.SimpleNamespace(_jvm=jvm, _jsparkSession=session)


def test_a_missing_local_directory_is_known_without_a_spark_listing():
    assert _surely_missing_locally(_classic(), "/t/_delta_log")
    # list_log answers empty without reading anything (the fake session has no reader)
    assert list_log(_classic(), "/t").empty  # type: ignore[arg-type]


def test_spark_is_asked_everywhere_else():
    assert not _surely_missing_locally(
        _classic(present=frozenset({"/t/_delta_log"})), "/t/_delta_log"
    )
    # the session's default file system is not local (Databricks' DBFS, HDFS, a cloud store)
    for scheme in ("dbfs", "hdfs", "abfss", "s3a"):
        assert not _surely_missing_locally(_classic(scheme), "/t/_delta_log")
    # Spark Connect: no JVM in this process, the paths are the server's
    assert not _surely_missing_locally(types.SimpleNamespace(), "/t/_delta_log")

    class RefusingJvm:  # a platform that refuses the JVM call
        def __getattr__(self, name: str) -> object:
            raise RuntimeError("py4j.security.Py4JSecurityException")

    refusing = types.SimpleNamespace(_jvm=RefusingJvm(), _jsparkSession=object())
    assert not _surely_missing_locally(refusing, "/t/_delta_log")
