"""Option parsing: names ignoring case, defaults, strict values, unknown names, secrets."""

from __future__ import annotations

import logging

import pytest

from mssql_cdc import Lsn
from mssql_cdc.options import OPTION_NAMES, parse_options

BASE = {"connectionString": "Server=h;PWD=s3cret-pw", "captureInstance": "dbo_orders"}


def test_defaults_follow_the_reference():
    o = parse_options(BASE)
    assert (o.capture_instance, o.connect_timeout, o.lock_timeout_ms) == ("dbo_orders", 30, None)
    assert (o.source_time_zone, o.columns, o.include_command_id) == ("auto", None, True)
    assert (o.starting_lsn, o.max_commits_per_batch, o.num_partitions) == ("earliest", None, None)
    assert (o.arrow_batch_size, o.fail_on_data_loss, o.schema_change_policy) == (
        10000,
        True,
        "classify",
    )
    assert (o.metrics_path, o.snapshot_lsn, o.isolation_level) == (None, None, "readCommitted")


def test_names_match_ignoring_case_as_spark_lowercases_them():
    o = parse_options(
        {
            "connectionstring": "Server=h",
            "CAPTUREINSTANCE": "dbo_x",
            "startinglsn": "2A000001F40003",
            "maxcommitsperbatch": "7",
            "numpartitions": "auto",
            "failondataloss": "No",
            "isolationlevel": "SNAPSHOT",
        }
    )
    assert o.starting_lsn == Lsn.parse("0x0000002A000001F40003")
    assert (o.max_commits_per_batch, o.num_partitions, o.fail_on_data_loss) == (7, None, False)
    assert o.isolation_level == "snapshot"


def test_every_documented_option_is_known():
    assert len(OPTION_NAMES) == 25
    assert "backend" not in OPTION_NAMES
    assert "fakepath" not in OPTION_NAMES


@pytest.mark.parametrize(
    ("name", "value", "allowed"),
    [
        ("failOnDataLoss", "ture", "true, false, 1, 0, yes, no, y or n"),
        ("includeCommandId", "", "true, false"),
        ("maxCommitsPerBatch", "0", "an integer from 1 to 2147483647"),
        ("arrowBatchSize", "1.5", "an integer from 1 to 2147483647"),
        ("numPartitions", "-2", "auto or an integer from 1 to 4096"),
        ("connectTimeout", "-1", "an integer from 0 to 2147483647"),
        ("lockTimeoutMs", "x", "an integer from 0 to 2147483647"),
        # adversarial inputs: signs, superscripts, other scripts' digits, absurd sizes
        ("maxCommitsPerBatch", "++5", "an integer from 1"),
        ("maxCommitsPerBatch", "\u00b2", "an integer from 1"),
        ("numPartitions", "\u0661\u0662", "auto or an integer from 1 to 4096"),
        ("numPartitions", "100000", "auto or an integer from 1 to 4096"),
        ("arrowBatchSize", "9" * 5000, "an integer from 1"),
        ("lockTimeoutMs", str(2**40), "an integer from 0 to 2147483647"),
        ("snapshotChunks", "[" * 100_000, "a JSON list"),
        ("startingLsn", "newest", "earliest, latest, or an LSN"),
        # the largest LSN has no next one: refused here, not with OverflowError at planning
        ("startingLsn", "0xFFFFFFFFFFFFFFFFFFFF", "an LSN below 0xFFFFFFFFFFFFFFFFFFFF"),
        ("startingLsn", "ffffffffffffffffffff", "an LSN below 0xFFFFFFFFFFFFFFFFFFFF"),
        ("sourceTimeZone", "Mars Standard Time", "auto, or a Windows time zone name"),
        ("schemaChangePolicy", "ignore", "classify or fail"),
        ("isolationLevel", "readUncommitted", "readCommitted or snapshot"),
        ("snapshotKeys", "id", "a JSON list"),
        ("snapshotChunks", "[[1, 2]]", "a JSON list of [chunk, lo, hi]"),
        ("captureInstance", "a]b", "without ']'"),
    ],
)
def test_a_bad_value_names_the_option_the_value_and_what_is_allowed(name, value, allowed):
    with pytest.raises(ValueError, match=name) as info:
        parse_options({**BASE, name: value})
    assert repr(value) in str(info.value)
    assert allowed in str(info.value)


@pytest.mark.parametrize("missing", ["connectionString", "captureInstance"])
def test_required_options(missing):
    options = {k: v for k, v in BASE.items() if k != missing}
    with pytest.raises(ValueError, match=f"Option '{missing}' is required"):
        parse_options(options)


def test_booleans_are_strict_in_every_spelling():
    for text, expected in [("TRUE", True), ("1", True), ("y", True), ("No", False), ("0", False)]:
        assert parse_options({**BASE, "failOnDataLoss": text}).fail_on_data_loss is expected


def test_unknown_options_are_kept_and_parsing_does_not_warn(caplog):
    # parse_options runs many times per stream; stream() and the data source warn
    # (mssql_cdc.options.warn_unknown, tests/compat/test_unknown_options.py)
    with caplog.at_level(logging.WARNING, logger="mssql_cdc"):
        first = parse_options({**BASE, "maxCommitPerBatch": "5"})
        second = parse_options({**BASE, "maxcommitperbatch": "5"})
    assert [r for r in caplog.records if "unknown option" in r.getMessage()] == []
    assert first.unknown == ("maxCommitPerBatch",)
    assert second.unknown == ("maxcommitperbatch",)


def test_secrets_never_show_in_repr_or_errors():
    o = parse_options({**BASE, "user": "u", "password": "hunter22", "accessToken": "tok-987"})
    text = repr(o)
    assert "hunter22" not in text
    assert "tok-987" not in text
    assert "s3cret-pw" not in text
    assert (o.password, o.access_token, o.user) == ("hunter22", "tok-987", "u")


def test_snapshot_options_parse_json():
    o = parse_options(
        {**BASE, "snapshotKeys": '["id"]', "snapshotChunks": "[[0, null, 10], [1, 10, null]]"}
    )
    assert o.snapshot_keys == ("id",)
    assert o.snapshot_chunks == ((0, None, 10), (1, 10, None))


def test_the_largest_lsn_but_one_is_a_starting_lsn():
    o = parse_options({**BASE, "startingLsn": "0xFFFFFFFFFFFFFFFFFFFE"})
    assert o.starting_lsn == Lsn.parse("0xFFFFFFFFFFFFFFFFFFFE")
    assert str(o.starting_lsn.next()) == "0xFFFFFFFFFFFFFFFFFFFF"
