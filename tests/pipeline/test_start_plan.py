"""``to_delta``'s start plan (``pipeline.start_plan``): every argument error, its type and
message, and the first one of a bad argument set, without Spark or a server; and the plan a
good argument set gives."""

from __future__ import annotations

import os

import pytest

from mssql_cdc.options import parse_options
from mssql_cdc.pipeline.platform import Platform
from mssql_cdc.pipeline.start_plan import StartPlan, ToDeltaArgs, plan_start

OPTIONS = {"connectionString": "Server=tcp:h,1", "captureInstance": "dbo_orders"}
GOOD = {"target": "bronze.orders", "app_id": "orders", "checkpoint": "/cp/orders"}
HERE = Platform()


def _plan(
    options: dict[str, str] | None = None, platform: Platform = HERE, **args: object
) -> StartPlan:
    raw = {**OPTIONS, **(options or {})}
    return plan_start(
        ToDeltaArgs(**{**GOOD, **args}),  # type: ignore[arg-type]
        raw,
        parse_options(raw),
        platform,
    )


@pytest.mark.parametrize(
    ("args", "options", "platform", "error", "message"),
    [
        ({"app_id": 7}, None, HERE, TypeError, "app_id must be a str, got int"),
        ({"app_id": " "}, None, HERE, ValueError, "app_id is empty"),
        ({"target": None}, None, HERE, TypeError, "target must be a table name or path"),
        ({"target": ""}, None, HERE, ValueError, "target is empty"),
        ({"target": "a..b"}, None, HERE, ValueError, "target 'a..b': an empty name part"),
        ({"facts_table": 3}, None, HERE, TypeError, "facts_table must be a table name or path"),
        ({"facts_table": "BRONZE.orders"}, None, HERE, ValueError, "is the target"),
        ({"checkpoint": 1.5}, None, HERE, TypeError, "checkpoint must be a path"),
        ({"checkpoint": " "}, None, HERE, ValueError, "checkpoint is empty"),
        ({"query_name": 5}, None, HERE, TypeError, "query_name must be a str"),
        ({"query_name": ""}, None, HERE, ValueError, "query_name is empty"),
        ({"bootstrap": "yes"}, None, HERE, TypeError, "bootstrap must be True or False"),
        ({"on_data_loss": "skip"}, None, HERE, ValueError, "on_data_loss must be 'fail' or"),
        ({"resnapshot_interval_days": "7"}, None, HERE, TypeError, "resnapshot_interval_days"),
        ({"resnapshot_interval_days": -1}, None, HERE, ValueError, "a finite number >= 0"),
        ({"snapshot_on_switch": 1}, None, HERE, TypeError, "snapshot_on_switch must be True"),
        ({"snapshot": "lazy"}, None, HERE, ValueError, "snapshot must be 'full' or 'chunked'"),
        (
            {"snapshot": "chunked", "snapshot_on_switch": True},
            None,
            HERE,
            ValueError,
            "snapshot='chunked' with snapshot_on_switch=True",
        ),
        ({"trigger": "now"}, None, HERE, TypeError, "trigger must be a dict"),
        ({"trigger": {}}, None, HERE, ValueError, "give exactly one trigger"),
        ({"trigger": {"continuous": "1 second"}}, None, HERE, ValueError, "continuous"),
        ({"trigger": {"processingTime": "10"}}, None, HERE, ValueError, "an interval Spark"),
        (
            {"trigger": None},
            None,
            Platform(databricks=True, serverless=True),
            ValueError,
            "does not run on Databricks serverless compute",
        ),
        (
            {},
            None,
            Platform(databricks=True),
            ValueError,
            "on Databricks Spark reads a path without a scheme on DBFS",
        ),
        (
            {"bootstrap": True},
            {"startingLsn": "0x0000002A000000010001"},
            HERE,
            ValueError,
            "bootstrap=True sets startingLsn itself",
        ),
        (
            {"on_data_loss": "resnapshot"},
            None,
            HERE,
            ValueError,
            "on_data_loss='resnapshot' needs facts_table",
        ),
        (
            {"on_data_loss": "resnapshot", "facts_table": "ops.facts"},
            {"failOnDataLoss": "false"},
            HERE,
            ValueError,
            "needs failOnDataLoss=true",
        ),
        (
            {"on_data_loss": "resnapshot", "facts_table": "ops.facts", "checkpoint": "s3://b/c"},
            None,
            HERE,
            ValueError,
            "keeps its generation state in the checkpoint",
        ),
        (
            {"on_data_loss": "resnapshot", "facts_table": "ops.facts", "checkpoint": "/dbfs/c"},
            None,
            HERE,
            ValueError,
            "is a URI or a /dbfs path",
        ),
        (
            {"bootstrap": True, "snapshot": "chunked"},
            None,
            HERE,
            ValueError,
            "snapshot='chunked' needs facts_table",
        ),
        ({}, {"metricsPath": "dbfs:/m"}, HERE, ValueError, "a dbfs:/ URI cannot be opened"),
        (
            {"snapshot_on_switch": True, "checkpoint": "s3://b/cp"},
            None,
            HERE,
            ValueError,
            "snapshot_on_switch=True learns of a capture-instance switch",
        ),
    ],
)
def test_each_bad_argument_is_refused_with_its_message(args, options, platform, error, message):
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        _plan(options, platform, **args)


@pytest.mark.parametrize(
    ("args", "options", "first"),
    [
        # the identity comes first, then the checkpoint, the name, bootstrap, the data-loss
        # arguments, the trigger, the platform, then the combinations and the metrics
        ({"app_id": "", "checkpoint": "", "trigger": {}}, None, "app_id is empty"),
        ({"checkpoint": "", "query_name": ""}, None, "checkpoint is empty"),
        ({"query_name": "", "bootstrap": 1}, None, "query_name is empty"),
        ({"bootstrap": 1, "on_data_loss": "x"}, None, "bootstrap must be True or False"),
        ({"on_data_loss": "x", "trigger": {}}, None, "on_data_loss must be"),
        ({"trigger": {}, "bootstrap": True}, {"startingLsn": "0x01"}, "exactly one trigger"),
        (
            {"bootstrap": True, "on_data_loss": "resnapshot", "snapshot": "chunked"},
            {"startingLsn": "0x0000002A000000010001", "metricsPath": "dbfs:/m"},
            "bootstrap=True sets startingLsn itself",
        ),
        (
            {"bootstrap": True, "on_data_loss": "resnapshot", "snapshot": "chunked"},
            {"metricsPath": "dbfs:/m"},
            "on_data_loss='resnapshot' needs facts_table",
        ),
        (
            {"bootstrap": True, "snapshot": "chunked"},
            {"metricsPath": "dbfs:/m"},
            "snapshot='chunked' needs facts_table",
        ),
        (
            {"snapshot_on_switch": True, "checkpoint": "s3://b/cp"},
            {"metricsPath": "dbfs:/m"},
            "a dbfs:/ URI cannot be opened",
        ),
    ],
)
def test_a_bad_argument_set_gives_the_first_error_in_order(args, options, first):
    with pytest.raises((TypeError, ValueError)) as caught:
        _plan(options, **args)
    assert first in str(caught.value)


def test_a_good_argument_set_gives_its_plan():
    plan = _plan(facts_table="ops.facts", trigger={"availableNow": True}, query_name="q")
    assert (plan.target.text, plan.app_id, plan.facts and plan.facts.text) == (
        "bronze.orders",
        "orders",
        "ops.facts",
    )
    assert (plan.checkpoint, plan.query_name, plan.trigger) == (
        "/cp/orders",
        "q",
        {"availableNow": True},
    )
    assert (plan.bootstrap, plan.chunked, plan.recovery.resnapshot) == (False, False, False)
    assert plan.warm_state == "within_batch"
    assert plan.options == OPTIONS
    assert plan.metrics_base is None


@pytest.mark.parametrize(
    ("trigger", "warm"),
    [
        (None, "between_batches"),
        ({"processingTime": "10 seconds"}, "between_batches"),
        ({"availableNow": True}, "within_batch"),
        ({"once": True}, "within_batch"),
    ],
)
def test_the_warm_state_follows_the_trigger(trigger, warm):
    assert _plan(trigger=trigger).warm_state == warm


def test_the_metrics_path_option_leaves_the_options_for_the_plan(tmp_path):
    plan = _plan({"metricsPath": " m "}, checkpoint=os.fspath(tmp_path))
    assert "metricsPath" not in plan.options
    assert plan.metrics_base == os.path.abspath("m")
    assert _plan({"metricsPath": "s3://b/m"}).metrics_base == "s3://b/m"
    assert _plan({"metricsPath": " "}).metrics_base is None
    chunked = _plan(bootstrap=True, snapshot="chunked", facts_table="ops.facts")
    assert (chunked.bootstrap, chunked.chunked) == (True, True)
    resnapshot = _plan(on_data_loss="resnapshot", facts_table="ops.facts")
    assert (resnapshot.recovery.resnapshot, resnapshot.recovery.interval_days) == (True, 7.0)


def test_a_bad_metrics_path_is_refused_before_the_recovery_reads_or_writes(monkeypatch, tmp_path):
    """The documented promise of ``to_delta``: a ``dbfs:/`` ``metricsPath`` is a ``ValueError``
    before anything is read or written. It was raised once the sink was built, after a
    recovery that may already have re-snapshotted the table into a new generation."""
    from mssql_cdc.pipeline.cdc_stream import CdcStream
    from mssql_cdc.snapshots import resnapshot as recovery

    calls: list[object] = []
    monkeypatch.setattr(recovery, "recover", lambda *a, **k: calls.append(a))
    raw = {**OPTIONS, "metricsPath": "dbfs:/metrics"}
    cdc = CdcStream(None, raw, parse_options(raw))  # type: ignore[arg-type]  # nothing runs
    with pytest.raises(ValueError, match="a dbfs:/ URI cannot be opened by the sink"):
        cdc.to_delta(
            str(tmp_path / "bronze"),
            "orders",
            str(tmp_path / "cp"),
            str(tmp_path / "facts"),
            on_data_loss="resnapshot",
        )
    assert calls == []
    assert list(tmp_path.iterdir()) == []  # no generation file, no table
