"""The metrics directory rules of ``to_delta`` (pure Python)."""

from __future__ import annotations

import logging

import pytest

from mssql_cdc.pipeline.locations import is_uri, resolve_metrics_path


def test_local_and_fuse_checkpoints_get_the_default_directory(tmp_path):
    assert resolve_metrics_path(str(tmp_path / "cp"), "a", None, has_facts=True) == str(
        tmp_path / "cp" / "_mssql_cdc_metrics"
    )
    assert resolve_metrics_path("/Volumes/m/ops/cp/", "a", None, has_facts=True) == (
        "/Volumes/m/ops/cp/_mssql_cdc_metrics"
    )
    assert resolve_metrics_path(str(tmp_path / "cp"), "a", None, has_facts=False) is None


def test_a_uri_checkpoint_gets_no_default_and_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="mssql_cdc"):
        assert resolve_metrics_path("s3://bucket/cp", "orders-v1", None, has_facts=True) is None
    assert "set the metricsPath option" in caplog.text


def test_an_explicit_metrics_path_holds_one_directory_per_app_id(tmp_path):
    assert resolve_metrics_path("s3://b/cp", "orders-v1", str(tmp_path), has_facts=True) == str(
        tmp_path / "orders-v1"
    )
    assert resolve_metrics_path("/cp", "o", "file:///tmp/m/", has_facts=False) == (
        "file:///tmp/m/o"
    )


@pytest.mark.parametrize("path", ["dbfs:/metrics", "DBFS:/x"])
def test_dbfs_uris_are_refused(path):
    with pytest.raises(ValueError, match="use the FUSE path"):
        resolve_metrics_path("/cp", "a", path, has_facts=True)


def test_unopenable_uris_are_refused():
    with pytest.raises(ValueError, match=r"cannot be opened by pyarrow\.fs"):
        resolve_metrics_path("/cp", "a", "nosuchscheme://x/y", has_facts=True)


def test_uri_kinds():
    paths = ("s3://b/x", "dbfs:/x", "abfss://c@a/x", "/dbfs/x", "cp", "C:/x")
    assert [is_uri(p) for p in paths] == [True, True, True, False, False, False]


def test_app_ids_that_sanitise_alike_get_their_own_directories(tmp_path):
    base = str(tmp_path)
    plain = resolve_metrics_path("/cp", "a_b", base, has_facts=True)
    hashed = resolve_metrics_path("/cp", "a#b", base, has_facts=True)
    other = resolve_metrics_path("/cp", "a b", base, has_facts=True)
    assert plain == str(tmp_path / "a_b")  # a name that needed no sanitising stays the same
    assert len({plain, hashed, other}) == 3
    assert hashed.startswith(str(tmp_path / "a_b-"))
    assert resolve_metrics_path("/cp", "a#b", base, has_facts=True) == hashed  # stable
