"""One map from native status to exception class, and finding our errors inside Spark's.

No server and no JVM: the statuses come from the compiled C library, the Spark text is the
shape a local Spark 4.2 query prints when a stream stops with DataLossError (trimmed).
"""

from __future__ import annotations

import pytest

import mssql_cdc
from mssql_cdc import _native, errors
from mssql_cdc.errors import (
    STATUS_CLASSES,
    ConnectionLostError,
    DataLossError,
    LoginError,
    ProtocolError,
    SchemaChangedError,
    SqlServerError,
    SqlTimeoutError,
    TlsError,
    UnsupportedDataError,
    find_error,
    find_error_in_text,
    from_status,
    is_data_loss,
    is_schema_changed,
)
from mssql_cdc.source.retry import is_transient, with_retry


def test_every_native_status_maps_to_exactly_one_class():
    statuses = [name for name in _native.STATUS_NAMES if name != "OK"]
    assert len(statuses) == len(set(statuses)) == len(_native.STATUS_NAMES) - 1
    assert set(STATUS_CLASSES) == set(statuses)
    for name in statuses:
        cls = STATUS_CLASSES[name]
        assert isinstance(cls, type), name
        assert issubclass(cls, Exception), name
        exc = from_status(name, "text")
        assert type(exc) is cls, name


def test_the_classes_of_each_status():
    assert {name: cls.__name__ for name, cls in STATUS_CLASSES.items()} == {
        "EINVAL": "ValueError",
        "ERANGE": "OverflowError",
        "ENOMEM": "MemoryError",
        "EPROTO": "ProtocolError",
        "NEEDMORE": "ProtocolError",
        "EIO": "ConnectionLostError",
        "ETIMEOUT": "SqlTimeoutError",
        "ESERVER": "SqlServerError",
        "ETLS": "TlsError",
        "ECLOSED": "ConnectionLostError",
        "EUNSUPPORTED": "UnsupportedDataError",
        "ELOGIN": "LoginError",
    }


def test_tls_and_out_of_memory_have_one_class_on_every_path():
    # They used to be TlsError / MemoryError on one path and a bare OSError on the other.
    assert isinstance(from_status("ETLS", "handshake failed"), TlsError)
    assert isinstance(from_status("ENOMEM", "out of memory"), MemoryError)


def test_a_server_error_keeps_its_fields():
    exc = from_status(
        "ELOGIN",
        "Login failed for user 'sa'.",
        number=18456,
        state=1,
        severity=14,
        server="db1",
        procedure="",
        line=1,
    )
    assert isinstance(exc, LoginError)
    assert (exc.number, exc.state, exc.severity, exc.server, exc.procedure, exc.line) == (
        18456,
        1,
        14,
        "db1",
        None,
        1,
    )
    assert str(exc) == "[18456] Login failed for user 'sa'."


def test_an_unknown_status_is_a_protocol_error_naming_it():
    exc = from_status("EFUTURE", "new")
    assert isinstance(exc, ProtocolError)
    assert str(exc) == "native status EFUTURE: new"


def test_unsupported_data_is_not_transient_but_a_corrupt_stream_is():
    assert not is_transient(from_status("EUNSUPPORTED", "unknown or unsupported data type 0xF4"))
    assert not is_transient(from_status("ERANGE", "a batch column would exceed 2 GiB"))
    assert is_transient(from_status("EPROTO", "unknown token 0x88"))
    for name in ("EIO", "ECLOSED", "ETIMEOUT"):
        assert is_transient(from_status(name, "x")), name
    assert not issubclass(UnsupportedDataError, ProtocolError)


def test_unsupported_data_is_raised_at_once_by_the_driver_retry():
    class FakeClient:
        closed = 0

        def close(self) -> None:
            self.closed += 1

    def call() -> None:
        raise UnsupportedDataError("char data with collation LCID 0x0007F: unknown code page")

    client = FakeClient()
    waits: list[float] = []
    with pytest.raises(UnsupportedDataError):
        with_retry(client, "x", call, sleep=waits.append)  # type: ignore[arg-type]
    assert waits == []
    assert client.closed == 0


# What str() of the StreamingQueryException a local Spark 4.2 query raised held (trimmed).
SPARK_DATA_LOSS = """\
[STREAM_FAILED] Query [id = 5f9d3ea2, runId = 6b0b0ad4] terminated with exception: \
[PYTHON_STREAMING_DATA_SOURCE_RUNTIME_ERROR] Failed when Python streaming data source perform \
planPartitions: Traceback (most recent call last):
  File "/x/pyspark/sql/streaming/python_streaming_source_runner.py", line 271, in main
  File "/x/mssql_cdc/source/planner.py", line 245, in _plan
    raise data_loss_error(
mssql_cdc.errors.DataLossError: dbo_orders: change data from 0x0000002A000000180003 is gone \
(min_lsn is now 0x0000002A000000200003). A re-snapshot is required.
 SQLSTATE: 38000 SQLSTATE: XXKST
=== Streaming Query ===
Current State: ACTIVE
"""


class StreamingQueryException(Exception):  # noqa: N818 (pyspark's name)
    """Stands in for pyspark's: its text, and the Py4J error it was raised from."""


class Py4JJavaError(Exception):  # py4j's name
    pass


def spark_failure(text: str) -> Exception:
    try:
        try:
            raise Py4JJavaError("An error occurred while calling o74.awaitTermination.\n: " + text)
        except Py4JJavaError:
            raise StreamingQueryException(text) from None
    except StreamingQueryException as exc:
        return exc


def test_data_loss_is_seen_through_sparks_wrapping():
    exc = spark_failure(SPARK_DATA_LOSS)
    assert is_data_loss(exc)
    assert not is_schema_changed(exc)
    found = find_error(exc)
    assert found is not None
    assert found.cls is DataLossError
    assert found.message.startswith("dbo_orders: change data from 0x0000002A000000180003 is gone")
    assert found.message.endswith("A re-snapshot is required.")


def test_the_context_py4j_error_is_searched_too():
    exc = spark_failure("no traceback here")
    exc.__context__ = Py4JJavaError(SPARK_DATA_LOSS)
    assert is_data_loss(exc)


def test_schema_changed_is_seen_through_sparks_wrapping():
    text = SPARK_DATA_LOSS.replace(
        "mssql_cdc.errors.DataLossError: dbo_orders: change data",
        "mssql_cdc.errors.SchemaChangedError: dbo_orders: column qty",
    )
    assert is_schema_changed(spark_failure(text))
    assert not is_data_loss(spark_failure(text))


def test_our_exceptions_raised_as_they_are_count_too():
    assert is_data_loss(DataLossError("gone"))
    assert is_schema_changed(SchemaChangedError("qty"))
    assert not is_data_loss(SchemaChangedError("qty"))
    wrapper = RuntimeError("wrapper")
    wrapper.__cause__ = DataLossError("gone")
    assert is_data_loss(wrapper)


def test_other_failures_are_neither():
    for exc in (
        RuntimeError("java.lang.OutOfMemoryError: Java heap space"),
        ValueError("bad"),
        spark_failure("mssql_cdc.errors.NoSuchThing: x"),
        ConnectionLostError("gone"),
    ):
        assert not is_data_loss(exc)
        assert not is_schema_changed(exc)


def test_in_a_chained_traceback_the_raised_error_wins_over_its_cause():
    text = (
        "Traceback (most recent call last):\n"
        "mssql_cdc.errors.SqlServerError: [313] An insufficient number of arguments\n\n"
        "The above exception was the direct cause of the following exception:\n\n"
        "Traceback (most recent call last):\n"
        "mssql_cdc.errors.DataLossError: gone\n"
    )
    found = find_error_in_text(text)
    assert found is not None
    assert (found.cls, found.message) == (DataLossError, "gone")
    assert str(found) == "DataLossError: gone"


def test_the_public_functions_are_typed_and_exported():
    assert mssql_cdc.is_data_loss is is_data_loss
    assert mssql_cdc.is_schema_changed is is_schema_changed
    assert is_data_loss.__annotations__ == {"exc": "BaseException", "return": "bool"}
    for name in ("UnsupportedDataError", "SqlServerError", "SqlTimeoutError"):
        assert name in errors.__all__
    assert issubclass(SqlTimeoutError, SqlServerError)
