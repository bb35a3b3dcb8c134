"""No secret in plan strings, progress, reprs or logs: a password inside ``connectionString``
is moved to the redacted ``password`` option, and sessions redact ``connectionString``."""

from __future__ import annotations

import logging

import pytest

from mssql_cdc import register, stream
from mssql_cdc.connection_string import attributes, has_password, move_password

REDACTION_CONF = "spark.sql.redaction.options.regex"


def test_the_password_moves_out_of_the_connection_string():
    text = "Server=tcp:db,1433; UID = u ;PWD={a;b}}c};Encrypt=no"
    moved = move_password({"connectionString": text, "captureInstance": "ci"})
    assert moved == {
        "connectionString": "Server=tcp:db,1433;UID = u;Encrypt=no",
        "captureInstance": "ci",
        "password": "a;b}c",
    }
    # the last one wins, as in the native client; a given password option overrides both
    assert move_password({"connectionString": "Server=db;Password=x;pwd=y"})["password"] == "y"
    given = move_password({"connectionString": "Server=db;PWD=x", "password": "p"})
    assert given == {"connectionString": "Server=db", "password": "p"}
    assert move_password({"connectionString": "Server=db"}) == {"connectionString": "Server=db"}
    assert not has_password("Server=db;App={PWD=x}")
    assert has_password("Server=db;AccessToken=t")
    with pytest.raises(ValueError, match="no closing") as info:
        attributes("Server=db;PWD={s3cret")
    assert "s3cret" not in str(info.value)
    assert "s3cret" not in repr(attributes("PWD=s3cret"))


def test_no_password_in_explain_progress_reprs_or_logs(spark, source, tmp_path, capsys, caplog):
    secret = source.server.password
    options = source.options()
    del options["password"]
    options["connectionString"] += f";PWD={secret}"
    caplog.set_level(logging.DEBUG, logger="mssql_cdc")
    cdc = stream(spark, options)
    assert secret not in cdc.options["connectionString"]
    assert cdc.options["password"] == secret
    assert "connectionstring" in spark.conf.get(REDACTION_CONF).lower()
    source.workload(1)
    query = cdc.to_delta(
        str(tmp_path / "bronze"),
        app_id="secret-v1",
        checkpoint=str(tmp_path / "cp"),
        facts_table=str(tmp_path / "facts"),
        trigger={"availableNow": True},
    )
    query.awaitTermination()
    assert query.lastProgress["numInputRows"] > 0 or len(query.recentProgress) > 1
    query.explain(extended=True)
    # the stream's plan as to_delta builds it, and by hand with the password left in the
    # connection string (redacted by the session's pattern)
    spark.readStream.format("mssql_cdc").options(**cdc.options).load().explain(mode="extended")
    register(spark)
    by_hand = spark.readStream.format("mssql_cdc").options(**options).load()
    by_hand.explain(mode="extended")
    spark.read.format("mssql_cdc_snapshot").options(**options).load().explain(mode="extended")
    shown = capsys.readouterr().out
    assert "StreamingRelationV2" in shown
    assert "password=*********(redacted)" in shown
    assert "connectionString=*********(redacted)" in shown
    texts = [shown, str(query.lastProgress), str(query.recentProgress), str(query.name)]
    texts += [str(q.status) for q in (query,)]
    texts.append(caplog.text)
    for text in texts:
        assert secret not in text


def test_reprs_of_the_data_source_and_readers_hold_no_secret():
    from pyspark.sql.types import StructType

    from mssql_cdc.options import parse_options
    from mssql_cdc.source.datasource import (
        AdmissionStreamReader,
        MssqlCdcDataSource,
        SnapshotReader,
    )

    raw = {"connectionString": "Server=db;PWD=s3cret", "captureInstance": "dbo_orders"}
    raw["accessToken"] = "t0ken-s3cret"
    source = MssqlCdcDataSource(raw)
    parsed = parse_options(raw)
    readers = [
        AdmissionStreamReader(parsed, StructType(), 1),
        SnapshotReader(parsed, StructType(), 1),
    ]
    for obj in (source, *readers):
        assert "s3cret" not in repr(obj)
        assert "dbo_orders" in repr(obj)
