"""Scripts written for the reference API: results read as mappings and its import paths
(issue 40, items 1 and 2). No Spark, except the freshness test."""

from __future__ import annotations

import json
import typing
from datetime import datetime, timedelta, timezone

import pytest

import mssql_cdc
from mssql_cdc import finalization, payloads, types
from mssql_cdc.types import ApplyResult, BackfillStatus

REFERENCE_KEYS = {
    "BackfillStatus": (
        "snapshot",
        "chunks_done",
        "chunks_total",
        "done",
        "paused",
        "state",
        "reason",
    ),
    "ApplyResult": ("rebuilt", "applied_lsn", "finalized_until", "bronze_found"),
    "ReconcileResult": (
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
    ),
}


def _status(state: str = "waiting_headroom") -> BackfillStatus:
    return BackfillStatus(
        state=state,  # type: ignore[arg-type]
        snapshot="0x0000002A000001F40003",
        chunks_done=2,
        chunks_total=5,
        rows_done=20,
        rows_estimated=50,
        eta_seconds=None,
        waves=1,
        reason="headroom 3.0 h < 24.0 h",
    )


def test_backfill_status_reads_as_the_reference_dict():
    status = _status()
    assert status["state"] == "waiting_headroom" == status.state
    assert status["paused"] is True
    assert status["done"] is False
    assert status["chunks_total"] == 5
    assert status["reason"] == "headroom 3.0 h < 24.0 h"
    as_dict = dict(status)
    assert (
        tuple(as_dict)[: len(REFERENCE_KEYS["BackfillStatus"])] == REFERENCE_KEYS["BackfillStatus"]
    )
    assert as_dict["rows_done"] == 20
    assert as_dict["waves"] == 1
    assert dict(status.items()) == as_dict
    assert list(status.keys()) == list(as_dict)
    assert "state" in status
    assert "nope" not in status
    assert status.get("nope", "default") == "default"
    assert len(status) == len(as_dict) == 11
    with pytest.raises(KeyError, match="nope"):
        status["nope"]
    # a plain dict of JSON values, as a job logs it
    assert json.loads(json.dumps(dict(status)))["snapshot"] == "0x0000002A000001F40003"
    done = _status("done")
    assert done["done"] is True
    assert done["paused"] is False


def test_apply_result_reads_as_the_reference_dict():
    result = ApplyResult(
        rebuilt=True,
        applied_lsn="0x0000002A000001F40003",
        finalized_until=datetime(2026, 3, 8, 9),
        bronze_found=True,
        bronze_rows=7,
        inserted=5,
    )
    assert result["applied_lsn"] == "0x0000002A000001F40003" == result.applied_lsn
    assert tuple(dict(result))[:4] == REFERENCE_KEYS["ApplyResult"]
    assert dict(result)["finalized_until"] == datetime(2026, 3, 8, 9)
    assert {k: v for k, v in result.items() if k == "inserted"} == {"inserted": 5}
    assert result == ApplyResult(
        True, "0x0000002A000001F40003", datetime(2026, 3, 8, 9), True, 7, 5
    )


def test_reconcile_result_reads_as_the_reference_dict():
    result = mssql_cdc.ReconcileResult(
        run_id="r",
        silver_version=3,
        silver_lsn=None,
        source_lsn="0x0000002A000001F40003",
        buckets=4,
        match=3,
        in_flight=0,
        mismatch=1,
        hashed=1,
        failures={"MISSING_TARGET": 2},
    )
    assert result["mismatch"] == 1
    assert result["failures"] == {"MISSING_TARGET": 2}
    assert tuple(dict(result))[:11] == REFERENCE_KEYS["ReconcileResult"]
    assert dict(result)["chunk_snapshot"] is None
    assert types.ReconcileResult is mssql_cdc.ReconcileResult


def test_the_reference_literal_types():
    assert typing.get_args(types.Granularity) == ("minute", "hour", "day") == types.GRANULARITIES
    assert typing.get_args(types.Isolation) == ("snapshot", "readCommitted") == types.ISOLATIONS
    assert typing.get_args(types.SnapshotMode) == ("full", "chunked") == types.SNAPSHOT_MODES
    assert mssql_cdc.Granularity is types.Granularity
    assert mssql_cdc.BackfillState is types.BackfillState
    assert tuple(finalization.GRANULARITIES) == types.GRANULARITIES


def test_operations_names_every_operation_code():
    assert dict(mssql_cdc.OPERATIONS) == {
        0: "snapshot",
        1: "delete",
        2: "insert",
        3: "update_before",
        4: "update_after",
    }
    with pytest.raises(TypeError):
        mssql_cdc.OPERATIONS[5] = "x"  # type: ignore[index]


def test_payload_types_name_the_keys_the_facts_carry():
    assert set(typing.get_type_hints(payloads.BatchDetail)) == {"warnings"}
    assert set(payloads.SnapshotChunkDetail.__required_keys__) == {
        "snapshot",
        "wave",
        "chunk",
        "lo",
        "hi",
        "last",
    }
    assert set(payloads.DataSkippedDetail.__required_keys__) == {"from", "to", "certain"}
    assert payloads.DataSkippedDetail.__optional_keys__ == frozenset({"reason"})
    assert set(payloads.SnapshotOpenDetail.__optional_keys__) == {"keys", "plan"}
    assert typing.get_args(payloads.SnapshotKind) == ("bootstrap", "resnapshot")
    assert mssql_cdc.SnapshotOpenDetail is payloads.SnapshotOpenDetail
    assert mssql_cdc.WaveMetadata is payloads.WaveMetadata


def test_the_fanout_module_is_the_many_tables_api():
    from mssql_cdc.fanout import await_all, start_many, stop_all  # noqa: PLC0415 (the test)

    assert (start_many, await_all, stop_all) == (
        mssql_cdc.start_many,
        mssql_cdc.await_all,
        mssql_cdc.stop_all,
    )


def test_session_and_query_protocols_accept_real_ones(spark):
    assert isinstance(spark, types.SparkSessionLike)
    assert not isinstance(object(), types.SparkSessionLike)
    query = (
        spark.readStream.format("rate")
        .load()
        .writeStream.format("noop")
        .queryName("compat_q")
        .start()
    )
    try:
        assert isinstance(query, types.StreamingQueryLike)
        assert isinstance(query, mssql_cdc.StreamingQueryLike)
    finally:
        query.stop()
    assert not isinstance("query", types.StreamingQueryLike)


@pytest.mark.parametrize("name", ["Backend", "CdcClient", "make_client"])
def test_odbc_only_names_say_what_to_use_instead(name):
    with pytest.raises(ImportError, match=f"mssql_cdc.{name} exists in the reference API only"):
        exec(f"from mssql_cdc import {name}")
    with pytest.raises(ImportError, match=r"ODBC backends: .*(use|read|no backend)"):
        getattr(mssql_cdc, name)


def test_a_name_nobody_has_is_still_an_attribute_error():
    with pytest.raises(AttributeError):
        mssql_cdc.no_such_name  # noqa: B018
    assert not hasattr(mssql_cdc, "no_such_name")


def test_data_source_exports():
    from mssql_cdc.source.datasource import HAS_ADMISSION_CONTROL, MssqlCdcDataSource  # noqa: PLC0415

    assert mssql_cdc.HAS_ADMISSION_CONTROL is HAS_ADMISSION_CONTROL
    assert mssql_cdc.MssqlCdcDataSource is MssqlCdcDataSource
    assert MssqlCdcDataSource.name() == "mssql_cdc"


def test_freshness_is_the_verdicts_age(spark, tmp_path):
    control = str(tmp_path / "control")
    assert finalization.freshness(spark, control, "bronze.t") is None
    end = {"lsn": "0x0000002A000001F40003", "commit_ts": "2026-03-08T09:59:59Z"}
    assert finalization.advance(spark, control, "bronze.t", end) == datetime(2026, 3, 8, 9)
    at = datetime(2026, 3, 8, 10, 30)
    assert finalization.freshness(spark, control, "bronze.t", now=at) == 5400.0
    aware = datetime(2026, 3, 8, 11, 30, tzinfo=timezone(timedelta(hours=1)))
    assert finalization.freshness(spark, control, "bronze.t", now=aware) == 5400.0
    assert finalization.freshness(spark, control, "other") is None
    age = finalization.freshness(spark, control, "bronze.t")
    assert age is not None
    assert age > 5400.0
