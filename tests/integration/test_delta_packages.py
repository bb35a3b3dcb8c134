"""Outside a checkout (no jars directory) local Spark gets Delta through spark.jars.packages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mssql_cdc import spark as spark_module
from mssql_cdc.spark import JARS_ENV, delta_package


@pytest.mark.parametrize(
    ("delta", "spark", "coordinate"),
    [
        ("4.0.1", "4.0.1", "io.delta:delta-spark_2.13:4.0.1"),
        ("4.1.0", "4.1.1", "io.delta:delta-spark_4.1_2.13:4.1.0"),
        ("4.1.0", "4.0.2", "io.delta:delta-spark_4.0_2.13:4.1.0"),
        ("4.4.0", "4.2.0", "io.delta:delta-spark_4.2_2.13:4.4.0"),
    ],
)
def test_the_coordinate_matches_the_delta_and_spark_versions(delta, spark, coordinate):
    assert delta_package(delta, spark) == coordinate


def test_the_default_coordinate_is_that_of_the_installed_packages():
    from importlib.metadata import version

    assert delta_package() == delta_package(version("delta-spark"), version("pyspark"))


def test_without_a_jars_directory_spark_resolves_the_package(monkeypatch, tmp_path):
    monkeypatch.delenv(JARS_ENV, raising=False)
    monkeypatch.setattr(sys, "prefix", str(tmp_path))  # an install without share/mssql_cdc/jars
    assert spark_module._delta_classpath() == ("spark.jars.packages", delta_package())


def test_a_named_jars_directory_without_jars_is_an_error_not_a_fallback(monkeypatch, tmp_path):
    monkeypatch.setenv(JARS_ENV, str(tmp_path))
    with pytest.raises(FileNotFoundError, match=JARS_ENV):
        spark_module._delta_classpath()


_SCRIPT = textwrap.dedent(
    """
    import json, sys
    sys.prefix = sys.argv[1]  # as installed by pip: no share/mssql_cdc/jars under the prefix
    from mssql_cdc.spark import get_spark
    spark = get_spark("packages-test", "local[1]", config={
        "spark.jars.ivy": sys.argv[2], "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "1"})
    table = sys.argv[3]
    spark.range(3).write.format("delta").save(table)
    rows = sorted(r.id for r in spark.read.format("delta").load(table).collect())
    print(json.dumps({"packages": spark.conf.get("spark.jars.packages", ""),
                      "jars": spark.conf.get("spark.jars", ""), "rows": rows}))
    spark.stop()
    """
)


#: Ivy's cache for the test below, kept between runs of one checkout (a fresh clone starts empty
#: and downloads from Maven Central; later runs resolve against the cache)
IVY = Path(__file__).resolve().parents[2] / "build" / "ivy-packages-test"


@pytest.mark.spark
def test_local_spark_with_delta_from_maven_central(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in (JARS_ENV, "SPARK_REMOTE")}
    # A machine without ~/.m2: Spark's Ivy also looks in <user.home>/.m2/repository, where a
    # Maven run may have left a pom without its jar (Ivy then fails the download).
    home = tmp_path / "home"
    home.mkdir()
    env["JDK_JAVA_OPTIONS"] = f"-Duser.home={home}"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            _SCRIPT,
            str(tmp_path / "prefix"),
            str(IVY),
            str(tmp_path / "table"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["packages"] == delta_package()
    assert "share/mssql_cdc/jars" not in result["jars"]
    assert result["rows"] == [0, 1, 2]
    # Ivy fetched the Delta jar into the session's own cache, not from share/mssql_cdc/jars
    assert list(IVY.rglob("*delta-spark_*.jar"))
