"""Generations and the data-loss arguments, without Spark: the state file, Spark's offset log
as the pre-flight reads it, the sink ids, and each refused argument."""

from __future__ import annotations

import json
import math

import pytest

from mssql_cdc.pipeline.arguments import check_recovery
from mssql_cdc.sink.ledger import ids
from mssql_cdc.sink.ledger.checkpoint import last_committed_offset
from mssql_cdc.sink.ledger.generations import (
    GenerationState,
    Recovering,
    generation_checkpoint,
    read_state,
    write_state,
)


def test_state_round_trip_and_absent_file_is_generation_zero(tmp_path):
    cp = str(tmp_path / "cp")
    assert read_state(cp) == GenerationState()
    state = GenerationState(
        1, "0x0000002A000000010001", "2026-11-30T10:00:00.000Z", "2026-12-01T09:00:00.000Z"
    )
    recovering = Recovering(2, "0x0000002A000000020001", "2026-11-30T11:00:00.000Z", "")
    write_state(cp, state.but(recovering=recovering))
    assert read_state(cp) == state.but(recovering=recovering)
    write_state(cp, state)
    assert read_state(cp) == state
    saved = json.loads((tmp_path / "cp" / "_mssql_cdc_generation.json").read_text())
    assert "recovering" not in saved
    assert [p.name for p in (tmp_path / "cp").iterdir()] == ["_mssql_cdc_generation.json"]


def test_a_foreign_state_file_is_a_clear_error(tmp_path):
    (tmp_path / "_mssql_cdc_generation.json").write_text('{"gen": 1}')
    with pytest.raises(ValueError, match="not a generation state mssql_cdc wrote"):
        read_state(str(tmp_path))


def test_uri_checkpoints_are_generation_zero():
    assert read_state("s3://bucket/cp") == GenerationState()


def test_names_of_a_generation(tmp_path):
    assert generation_checkpoint("/cp", 0) == "/cp"
    assert generation_checkpoint("/cp", 3) == "/cp/_generations/3"
    assert ids.sink_id("orders", 0) == "orders"
    assert ids.sink_id("orders", 2) == "orders.g2"
    assert ids.resnapshot("orders", 2) == ("orders#events", 2)
    with pytest.raises(ValueError, match="generation 1 or later"):
        ids.resnapshot("orders", 0)
    assert ids.stream_of("orders.g2", 2) == "orders"
    assert ids.stream_of("orders.g2", 0) == "orders.g2"  # a stream named so, generation 0
    assert [
        ids.belongs("orders", s) for s in ("orders", "orders.g12", "orders.g", "orders.g\u0662")
    ] == [
        True,
        True,
        False,
        False,  # an Arabic-Indic digit is not a generation number
    ]


def test_last_committed_offset_reads_the_newest_committed_batch(tmp_path):
    assert last_committed_offset(str(tmp_path)) is None
    (tmp_path / "offsets").mkdir()
    (tmp_path / "commits").mkdir()
    for batch, lsn in ((0, "0x00000001000000010001"), (1, "0x00000002000000010001"), (2, "x")):
        (tmp_path / "offsets" / str(batch)).write_text(
            'v1\n{"batchWatermarkMs":0}\n'
            + json.dumps({"lsn": lsn, "commit_ts": "2026-11-30T10:00:00.000Z"})
        )
    for batch in (0, 1):  # batch 2 planned, not committed
        (tmp_path / "commits" / str(batch)).write_text("v1\n{}")
    assert last_committed_offset(str(tmp_path)) == {
        "lsn": "0x00000002000000010001",
        "commit_ts": "2026-11-30T10:00:00.000Z",
    }
    (tmp_path / "offsets" / "1").write_text("v2\n{}\n{}")
    with pytest.raises(ValueError, match="reads only v1"):
        last_committed_offset(str(tmp_path))


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        (("never", 7.0, False, "full"), ValueError, "on_data_loss must be 'fail' or 'resnapshot'"),
        (("fail", -1, False, "full"), ValueError, "resnapshot_interval_days must be a finite"),
        (("fail", math.nan, False, "full"), ValueError, "resnapshot_interval_days"),
        (("fail", "7", False, "full"), TypeError, "resnapshot_interval_days must be a number"),
        (("fail", True, False, "full"), TypeError, "resnapshot_interval_days must be a number"),
        (("fail", 7, 1, "full"), TypeError, "snapshot_on_switch must be True or False"),
        (("fail", 7, False, "lazy"), ValueError, "snapshot must be 'full' or 'chunked'"),
        (("fail", 7, True, "chunked"), ValueError, "snapshot='chunked' with snapshot_on_switch"),
    ],
)
def test_refused_data_loss_arguments(args, error, message):
    with pytest.raises(error, match=message):
        check_recovery(*args)


def test_chunked_snapshot_mode_is_accepted():
    assert check_recovery("fail", 7, False, "chunked").snapshot == "chunked"
    assert check_recovery("resnapshot", 7, False, "chunked").snapshot == "chunked"
    assert check_recovery("fail", 7, False, "full").snapshot == "full"


def test_accepted_data_loss_arguments():
    assert check_recovery("resnapshot", 0, False, "full").resnapshot is True
    assert check_recovery("fail", 7, False, "full").interval_days == 7.0


def test_unfinished_first_log_entry_is_removed_and_a_written_log_left_alone(tmp_path):
    from mssql_cdc.sink.ledger.checkpoint import clear_unfinished_log_writes

    temp = ".0.fe696882-0b23-4518-9c43-07a30ed71cf0.tmp"
    offsets = tmp_path / "cp" / "offsets"
    offsets.mkdir(parents=True)
    (tmp_path / "cp" / "commits").mkdir()
    (offsets / temp).write_text("v1")
    (offsets / f".{temp}.crc").write_text("crc")
    (offsets / "notes.txt").write_text("not Spark's")  # not a log temp file: kept
    removed = clear_unfinished_log_writes(str(tmp_path / "cp"))
    assert sorted(removed) == sorted([str(offsets / temp), str(offsets / f".{temp}.crc")])
    assert sorted(p.name for p in offsets.iterdir()) == ["notes.txt"]

    # a log with an entry: its temporary files are Spark's business
    (offsets / "0").write_text("v1")
    (offsets / ".1.0b5e3c8e-1d7a-4c1e-9d7b-2f6f1c1a0e11.tmp").write_text("v1")
    assert clear_unfinished_log_writes(str(tmp_path / "cp")) == []
    assert clear_unfinished_log_writes("abfss://c@a.dfs.core.windows.net/cp") == []
    assert clear_unfinished_log_writes(str(tmp_path / "none")) == []
