"""Planning warnings reach the metrics directory once per run (mssql_cdc.source.run_warnings),
and the facts fold them into ``detail.warnings`` without an event row."""

from __future__ import annotations

import logging
import threading

from mssql_cdc._metrics import metrics_dir
from mssql_cdc.sink.facts import EventRow, event_warnings
from mssql_cdc.source.run_warnings import AS_EVENT, RunWarnings

log = logging.getLogger("mssql_cdc.source")


def _messages(path: str) -> list[str]:
    return [e["message"] for e in metrics_dir(path).events() if e["kind"] == "warning"]


def test_each_warning_logged_in_a_call_is_recorded_once_per_run(tmp_path, caplog):
    path = str(tmp_path / "m")
    run = RunWarnings(path)
    with caplog.at_level(logging.WARNING, logger="mssql_cdc"):
        for _ in range(3):  # three triggers log the same warning
            with run.collecting():
                log.warning("maxCommitsPerBatch=%d has no effect", 5)
                log.info("not a warning")
                logging.getLogger("other").warning("not ours")
        with run.collecting():
            logging.getLogger("mssql_cdc.source.retry").error("latestOffset failed")
    assert sorted(_messages(path)) == ["latestOffset failed", "maxCommitsPerBatch=5 has no effect"]
    assert run.recorded == {"latestOffset failed", "maxCommitsPerBatch=5 has no effect"}
    # logging itself is unchanged: every call still logs
    assert [r.getMessage() for r in caplog.records].count("maxCommitsPerBatch=5 has no effect") == 3
    # after the sink cleared the directory, the same run does not record it again
    metrics_dir(path).clear()
    with run.collecting():
        log.warning("maxCommitsPerBatch=%d has no effect", 5)
    assert _messages(path) == []


def test_only_the_calling_thread_and_never_outside_the_block(tmp_path):
    path = str(tmp_path / "m")
    run = RunWarnings(path)
    log.warning("before the block")
    with run.collecting():
        other = threading.Thread(target=lambda: log.warning("another thread"))
        other.start()
        other.join()
        logging.getLogger("mssql_cdc.metrics").warning("the metrics directory's own")
        log.warning("DDL at 0x05 inside the batch", extra=AS_EVENT)  # an event row carries it
    log.warning("after the block")
    assert _messages(path) == []
    # the collector is gone
    assert not [
        h for h in logging.getLogger("mssql_cdc").handlers if type(h).__name__ == "_Collector"
    ]


def test_without_a_metrics_path_nothing_is_written(tmp_path):
    run = RunWarnings(None)
    with run.collecting():
        log.warning("only logged")
    assert run.recorded == {"only logged"}
    assert list(tmp_path.iterdir()) == []


def test_the_facts_fold_warnings_into_detail_not_rows():
    events = [
        {"kind": "warning", "key": "b", "message": "second"},
        {"kind": "warning", "key": "a", "message": "first"},
        {"kind": "warning", "key": "a2", "message": "first"},
        {"kind": "schema_change", "key": "x", "lsn": "0x" + "0" * 19 + "5", "detail": "DDL"},
    ]
    assert event_warnings(events) == ["first", "second"]
    rows = EventRow.from_files(0, events)
    assert len(rows) == 1  # the schema change only
