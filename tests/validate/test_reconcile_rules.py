"""Reconcile's bucketing rules, argument checks and key JSON (mssql_cdc.validate.buckets), and
docs/validation.md listing the report table's columns as declared."""

from __future__ import annotations

import datetime as dt
import json
import re
from decimal import Decimal
from pathlib import Path

import pytest

from mssql_cdc.sink.schemas import RECONCILE
from mssql_cdc.validate.buckets import (
    FINE_BUCKETS,
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


def test_single_integer_and_date_keys_are_ranged_others_whole_table():
    for t in ("tinyint", "smallint", "int", "bigint"):
        assert key_kind([t]) == "int"
    assert key_kind(["date"]) == "date"
    for other in (["nvarchar"], ["datetime2"], ["uniqueidentifier"], ["int", "int"], []):
        assert key_kind(other) is None


def test_units_are_integers_and_day_numbers():
    assert key_unit(42, "int") == 42
    assert key_unit(dt.date(1970, 1, 1), "date") == 0
    assert key_unit(dt.date(1969, 12, 31), "date") == -1
    assert key_unit(dt.date(2024, 1, 2), "date") == 19724
    assert key_unit(None, "int") is None
    assert unit_value(19724, "date") == "2024-01-02"
    assert unit_value(-3, "int") == -3
    assert bound_json(19724, "date") == '"2024-01-02"'
    assert bound_json(None, "int") is None
    assert bound_json(5, None) is None


def test_the_grid_has_at_most_the_fine_buckets_and_covers_the_range():
    g = grid(1, 10)
    assert g == Grid(1, 1, 10)
    big = grid(-(2**40), 2**40)
    assert big.count <= FINE_BUCKETS
    assert big.start(big.count - 1) <= 2**40 < big.start(big.count - 1) + big.width
    assert grid(None, None) == Grid(0, 1, 1)


def test_fine_buckets_clamp_outside_keys_and_put_null_first():
    g = grid(100, 199)  # width 1, 100 buckets
    assert g.fine(100) == 0
    assert g.fine(150) == 50
    assert g.fine(5) == 0  # a silver key below the source's range
    assert g.fine(10**12) == 99  # above it
    assert g.fine(None) == 0
    wide = Grid(0, 7, 3)
    assert [wide.fine(u) for u in (0, 6, 7, 13, 14, 20, 21)] == [0, 0, 1, 1, 2, 2, 2]


def test_merge_cuts_after_the_fine_bucket_reaching_bucket_rows_first_and_last_open():
    g = Grid(0, 10, 6)
    buckets = merge(g, {0: 3, 1: 1, 2: 4, 4: 2, 5: 1}, bucket_rows=4)
    assert buckets == [
        Bucket(0, 0, 2, None, 20),
        Bucket(1, 2, 3, 20, 30),
        Bucket(2, 3, 6, 30, None),
    ]
    assert [bucket_of(buckets, f) for f in range(6)] == [0, 0, 1, 2, 2, 2]


def test_merge_of_one_bucket_and_of_an_empty_table():
    assert merge(Grid(0, 1, 4), {0: 1, 3: 1}, bucket_rows=10) == [Bucket(0, 0, 4, None, None)]
    assert merge(Grid(0, 1, 1), {}, bucket_rows=1) == [Bucket(0, 0, 1, None, None)]
    # the last fine bucket reaching bucket_rows does not open an empty bucket after it
    assert merge(Grid(0, 1, 2), {0: 1, 1: 1}, bucket_rows=1) == [
        Bucket(0, 0, 1, None, 1),
        Bucket(1, 1, 2, 1, None),
    ]


def test_sample_is_all_none_or_a_seeded_repeatable_choice():
    ids = list(range(200))
    assert sampled(ids, 1.0, None) == set(ids)
    assert sampled(ids, 0.0, None) == set()
    some = sampled(ids, 0.1, 7)
    assert some == sampled(ids, 0.1, 7)
    assert 5 < len(some) < 40


def test_key_json_names_null_components_and_writes_types_as_text():
    assert json.loads(key_json(["id", "code"], [1, None])) == {"id": 1, "code": None}
    assert key_json(["code"], [None]) == '{"code": null}'
    assert json.loads(
        key_json(["d", "m", "b"], [dt.date(2024, 1, 2), Decimal("1.50"), b"\x0a"])
    ) == {
        "d": "2024-01-02",
        "m": "1.50",
        "b": "0x0A",
    }


@pytest.mark.parametrize(
    ("bucket_rows", "sample", "seed", "error", "message"),
    [
        (0, 0.5, None, ValueError, r"bucket_rows must be an integer >= 1 .*got 0"),
        (-5, 0.5, None, ValueError, r"bucket_rows must be an integer >= 1"),
        (1.5, 0.5, None, TypeError, r"bucket_rows must be an int >= 1, got float"),
        (True, 0.5, None, TypeError, r"bucket_rows must be an int"),
        (10, -0.1, None, ValueError, r"sample must be from 0 to 1 .*got -0.1"),
        (10, 1.5, None, ValueError, r"sample must be from 0 to 1"),
        (10, "0.5", None, TypeError, r"sample must be a number from 0 to 1, got str"),
        (10, 0.5, "x", TypeError, r"seed must be an int or None"),
    ],
)
def test_bad_arguments_name_the_argument_and_its_allowed_values(
    bucket_rows, sample, seed, error, message
):
    with pytest.raises(error, match=message):
        check_arguments(bucket_rows, sample, seed)


def test_good_arguments_pass():
    check_arguments(1, 0, None)
    check_arguments(1_000_000, 1, 3)
    check_arguments(10, 0.01, None)


def test_keys_must_be_captured_columns():
    captured = ["id", "Code", "name"]
    assert check_keys(["id"], captured, "dbo_t") == ("id",)
    assert check_keys("code", captured, "dbo_t") == ("Code",)
    with pytest.raises(ValueError, match=r"keys: 'nope' is not a captured column of 'dbo_t'"):
        check_keys(["id", "nope"], captured, "dbo_t")
    with pytest.raises(ValueError, match=r"allowed values: \['id', 'Code', 'name'\]"):
        check_keys(["nope"], captured, "dbo_t")
    with pytest.raises(ValueError, match="non-empty list"):
        check_keys([], captured, "dbo_t")
    with pytest.raises(ValueError, match="twice"):
        check_keys(["id", "ID"], captured, "dbo_t")


def test_docs_list_every_report_column_in_order():
    doc = (Path(__file__).parents[2] / "docs" / "validation.md").read_text()
    doc = doc.split("## The report table", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\| `(\w+)` \| ([\w(),]+) \|", doc, flags=re.MULTILINE)
    assert listed == [(n, t) for n, t, _ in RECONCILE.columns]
