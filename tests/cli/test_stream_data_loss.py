"""``mssql-cdc stream --on-data-loss``: the choice reaches ``start_database`` (and
``to_delta``/``start_many``) as ``on_data_loss``; another value is refused by argparse. No
Spark: the verbs are replaced by fakes that record their arguments."""

from __future__ import annotations

import argparse
import io

import pytest

import mssql_cdc
from mssql_cdc.cli import stream_command


class _Query:
    name = "db"
    recentProgress = ()  # noqa: N815 (Spark's name)

    def awaitTermination(self) -> None:  # noqa: N802 (Spark's name)
        return None


def _args(*extra: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    stream_command.add_arguments(parser)
    return parser.parse_args(
        [
            "--server",
            "sql.example.com",
            "--capture-instance",
            "dbo_a",
            "--capture-instance",
            "dbo_b",
            "--target",
            "bronze.{ci}",
            "--app-id",
            "app-{ci}",
            "--checkpoint",
            "/chk/db",
            "--facts-table",
            "ops.facts",
            "--database-stream",
            "db",
            *extra,
        ]
    )


@pytest.mark.parametrize("given", [None, "fail", "resnapshot"])
def test_the_database_stream_gets_the_data_loss_choice(monkeypatch, given):
    seen: dict[str, object] = {}

    def start_database(spark, options, instances, **kwargs):
        seen.update(kwargs, instances=instances)
        return _Query()

    monkeypatch.setattr(mssql_cdc, "start_database", start_database)
    monkeypatch.setattr(mssql_cdc, "parked_tables", lambda spark, **kwargs: {})
    args = _args(*(() if given is None else ("--on-data-loss", given)))
    code = stream_command._run_database(
        None, args, {}, {"availableNow": True}, io.StringIO(), instances=["dbo_a", "dbo_b"]
    )
    assert code == 0
    assert seen["on_data_loss"] == (given or "fail")
    assert seen["instances"] == ["dbo_a", "dbo_b"]


def test_another_data_loss_choice_is_refused(capsys):
    with pytest.raises(SystemExit):
        _args("--on-data-loss", "skip")
    assert "invalid choice: 'skip'" in capsys.readouterr().err
