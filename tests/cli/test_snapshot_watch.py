"""``mssql-cdc stream --bootstrap``: the snapshot's progress from the driver's status tracker
(mssql_cdc.cli.snapshot_watch)."""

from __future__ import annotations

import io
import threading
from dataclasses import dataclass

import pytest

from mssql_cdc.cli.snapshot_watch import SnapshotWatch, StageTally, watch_line


@dataclass
class Stage:
    numTasks: int  # noqa: N815 (PySpark's SparkStageInfo names)
    numCompletedTasks: int  # noqa: N815


class Tracker:
    def __init__(self) -> None:
        self.stages: dict[int, Stage] = {}

    def getActiveStageIds(self) -> list[int]:  # noqa: N802
        return list(self.stages)

    def getStageInfo(self, stage_id: int) -> Stage | None:  # noqa: N802
        return self.stages.get(stage_id)


class Session:
    def __init__(self, tracker: Tracker) -> None:
        self.sparkContext = self
        self.tracker = tracker

    def statusTracker(self) -> Tracker:  # noqa: N802
        return self.tracker


def test_the_line_gives_tasks_elapsed_and_an_eta_at_the_pace_so_far():
    assert watch_line("bootstrap of t", StageTally(8, 0), 5) == (
        "bootstrap of t: 0 of 8 tasks done, 0m05s elapsed, ETA -"
    )
    # 2 tasks in 60 s: 6 more take 180 s
    assert watch_line("b", StageTally(8, 2), 60) == "b: 2 of 8 tasks done, 1m00s elapsed, ETA 3m00s"
    assert (
        watch_line("b", StageTally(4, 1), 3600) == "b: 1 of 4 tasks done, 1h00m elapsed, ETA 3h00m"
    )
    assert watch_line("b", StageTally(4, 4), 30).endswith("ETA 0m00s")


def test_short_stages_print_nothing_and_each_change_prints_once():
    tracker, now = Tracker(), [100.0]
    out = io.StringIO()
    watch = SnapshotWatch(Session(tracker), "bootstrap of t", out, clock=lambda: now[0])  # type: ignore[arg-type]
    tracker.stages = {7: Stage(1, 0)}  # a facts commit's stage: gone within 2 s
    assert watch.look() is None
    now[0] += 1.0
    tracker.stages = {8: Stage(4, 0)}  # the snapshot's stage, first seen now
    assert watch.look() is None
    now[0] += 2.5
    assert watch.look() == "bootstrap of t: 0 of 4 tasks done, 0m02s elapsed, ETA -"
    assert watch.look() is None  # nothing changed
    now[0] += 10
    tracker.stages[8].numCompletedTasks = 3
    assert watch.look() == "bootstrap of t: 3 of 4 tasks done, 0m12s elapsed, ETA 0m04s"
    assert out.getvalue().splitlines() == [
        "bootstrap of t: 0 of 4 tasks done, 0m02s elapsed, ETA -",
        "bootstrap of t: 3 of 4 tasks done, 0m12s elapsed, ETA 0m04s",
    ]


def test_on_spark_connect_the_watch_is_idle():
    class Remote:
        @property
        def sparkContext(self):  # noqa: N802
            raise RuntimeError("[JVM_ATTRIBUTE_NOT_SUPPORTED] sparkContext is not supported")

    out = io.StringIO()
    with SnapshotWatch(Remote(), "b", out, interval=0.01) as watch:  # type: ignore[arg-type]
        assert watch.tracker is None
    assert out.getvalue() == ""


@pytest.mark.spark
def test_a_real_stage_is_followed_until_its_tasks_end(spark, tmp_path):
    release = tmp_path / "release"
    path = str(release)

    def held(rows):
        import os
        import time

        while not os.path.exists(path):  # the test releases the tasks once it saw them
            time.sleep(0.02)
        yield from rows

    out = io.StringIO()
    with SnapshotWatch(spark, "bootstrap of t", out, interval=0.05, min_seconds=0):
        job = threading.Thread(
            target=lambda: spark.sparkContext.parallelize(range(4), 2).mapPartitions(held).count()
        )
        job.start()
        seen = threading.Event()
        for _ in range(600):  # up to 30 s for the stage to show
            if "0 of 2 tasks done" in out.getvalue():
                seen.set()
                break
            seen.wait(0.05)
        release.touch()
        job.join(60)
    assert seen.is_set(), out.getvalue()
    assert out.getvalue().splitlines()[0].startswith("bootstrap of t: 0 of 2 tasks done, ")
