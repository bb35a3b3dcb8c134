"""The pure rules of apply_changes (mssql_cdc.silver.rules): argument checks, the columns silver
takes from bronze, the order of a key's images and the MERGE statements. No Spark."""

from __future__ import annotations

import pytest

from mssql_cdc.silver import rules

BRONZE = [
    "_capture_instance",
    "_start_lsn",
    "_seqval",
    "_operation",
    "_command_id",
    "_commit_ts",
    "id",
    "Code",
    "qty",
    "_batch_id",
    "_snapshot",
    "_chunk",
]


@pytest.mark.parametrize("value", [0, 3, "x", None, 1.0, True, [1]])
def test_scd_type_must_be_1_or_2(value):
    with pytest.raises(ValueError, match=r"scd_type must be 1 or 2, got"):
        rules.check_scd_type(value)


def test_scd_type_takes_ints_and_their_text():
    assert [rules.check_scd_type(v) for v in (1, 2, "1", " 2")] == [1, 2, 1, 2]


def test_captured_columns_leave_the_metadata_out():
    assert rules.captured_columns(BRONZE) == ["id", "Code", "qty"]
    assert rules.order_columns(BRONZE) == ["_start_lsn", "_command_id", "_seqval", "_operation"]
    without = [c for c in BRONZE if c != "_command_id"]
    assert rules.order_columns(without) == ["_start_lsn", "_seqval", "_operation"]


def test_keys_are_spelled_as_bronze_spells_them():
    captured = rules.captured_columns(BRONZE)
    assert rules.check_keys(["code", "ID"], captured) == ["Code", "id"]
    assert rules.check_keys("id", captured) == ["id"]
    with pytest.raises(ValueError, match=r"keys: 'nope' is not a captured column .*id, Code, qty"):
        rules.check_keys(["nope"], captured)
    with pytest.raises(ValueError, match="keys is empty"):
        rules.check_keys([], captured)


def test_track_columns():
    captured = rules.captured_columns(BRONZE)
    assert rules.check_track_columns(None, 2, captured, ["id"]) == ["Code", "qty"]
    assert rules.check_track_columns(["QTY", "id"], 2, captured, ["id"]) == ["qty"]
    with pytest.raises(ValueError, match="track_columns applies only to scd_type=2"):
        rules.check_track_columns(["qty"], 1, captured, ["id"])
    with pytest.raises(ValueError, match="track_columns: 'x' is not a captured column"):
        rules.check_track_columns(["x"], 2, captured, ["id"])
    with pytest.raises(ValueError, match="track_columns is empty"):
        rules.check_track_columns([], 2, captured, ["id"])


def test_capture_instance_from_the_argument_or_the_options():
    assert rules.options_instance("a", {"captureInstance": "b"}) == "a"
    assert rules.options_instance(None, {"CAPTUREINSTANCE": "b"}) == "b"
    with pytest.raises(ValueError, match="capture_instance is missing"):
        rules.options_instance(None, {"user": "sa"})


def test_type_1_merge_takes_only_newer_images_and_a_rebuild_deletes_what_the_source_lacks():
    columns = ["id", "Code", "_start_lsn", "_commit_ts"]
    incremental = rules.scd1_merge("`s`", "v", ["id", "Code"], columns, rebuild=False)
    assert "ON t.`id` <=> s.`id` AND t.`Code` <=> s.`Code`" in incremental
    assert "WHEN MATCHED AND s._mssql_cdc_delete AND t._start_lsn <= s._start_lsn THEN DELETE" in (
        incremental
    )
    assert "AND t._start_lsn < s._start_lsn THEN UPDATE SET" in incremental
    assert "NOT MATCHED BY SOURCE" not in incremental
    rebuild = rules.scd1_merge("`s`", "v", ["id"], columns, rebuild=True)
    assert rebuild.endswith("WHEN NOT MATCHED BY SOURCE THEN DELETE")
    assert "t._start_lsn <" not in rebuild


def test_type_2_merge_matches_a_version_by_key_and_start():
    text = rules.scd2_merge("`h`", "v", ["id"], ["id", "_start_lsn"])
    assert "ON t.`id` <=> s.`id` AND t._start_lsn = s._start_lsn" in text
    assert "DELETE" not in text


def test_silver_columns_follow_the_declarations():
    assert rules.silver_columns(["id"], 1) == ["id", "_start_lsn", "_commit_ts"]
    assert rules.silver_columns(["id"], 2) == [
        "id",
        "_start_lsn",
        "_commit_ts",
        "__START_AT",
        "__END_AT",
        "_end_lsn",
        "__IS_CURRENT",
    ]
