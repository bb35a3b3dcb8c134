"""Outside a checkout (no jars directory) local Spark gets Delta through spark.jars.packages."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mssql_cdc import spark as spark_module
from mssql_cdc.delta_jars import PUBLISHED, delta_jar
from mssql_cdc.errors import DeltaJarsError
from mssql_cdc.spark import JARS_ENV, delta_package


@pytest.mark.parametrize(
    ("delta", "spark", "coordinate"),
    [
        ("4.0.0", "4.0.0", "io.delta:delta-spark_2.13:4.0.0"),
        ("4.0.1", "4.0.1", "io.delta:delta-spark_2.13:4.0.1"),
        ("4.1.0", "4.1.1", "io.delta:delta-spark_4.1_2.13:4.1.0"),
        ("4.1.0", "4.0.2", "io.delta:delta-spark_4.0_2.13:4.1.0"),
        ("4.3.1", "4.1.1", "io.delta:delta-spark_4.1_2.13:4.3.1"),
        ("4.4.0", "4.2.0", "io.delta:delta-spark_4.2_2.13:4.4.0"),
        ("4.4.0", "4.1.4", "io.delta:delta-spark_4.1_2.13:4.4.0"),
        # a Delta minor newer than the table: its own coordinate, for Spark to resolve
        ("4.5.0", "4.3.0", "io.delta:delta-spark_4.3_2.13:4.5.0"),
    ],
)
def test_the_coordinate_matches_the_delta_and_spark_versions(delta, spark, coordinate):
    assert delta_package(delta, spark) == coordinate


@pytest.mark.parametrize(
    ("delta", "spark", "coordinate"),
    [
        # on PyPI without jars on Maven Central: the newest published jar of Delta 4.4
        ("4.4.1", "4.2.0", "io.delta:delta-spark_4.2_2.13:4.4.0"),
        ("4.4.1", "4.0.5", "io.delta:delta-spark_4.0_2.13:4.4.0"),
        ("4.4.7", "4.2.0", "io.delta:delta-spark_4.2_2.13:4.4.0"),
    ],
)
def test_a_patch_release_without_a_jar_gets_the_newest_published_jar_of_its_minor(
    delta, spark, coordinate, caplog
):
    caplog.set_level(logging.INFO, logger="mssql_cdc.spark")
    assert delta_package(delta, spark) == coordinate
    minor = spark.rsplit(".", 1)[0]
    assert (
        f"delta-spark {delta} has no jar for Spark {minor} on Maven Central: using "
        f"{coordinate}, the newest published jar of Delta 4.4"
    ) in caplog.messages


@pytest.mark.parametrize(
    ("delta", "spark", "message"),
    [
        (
            "4.0.1",
            "4.2.0",
            "no Delta jar of delta-spark 4.0.1 is published for Spark 4.2 (pyspark 4.2.0); "
            "Delta 4.0 has jars for Spark 4.0. Spark 4.2 has jars of Delta 4.4: install that "
            "delta-spark (pip install 'delta-spark==4.4.*')",
        ),
        (
            "4.3.1",
            "4.2.1",
            "Delta 4.3 has jars for Spark 4.0 or 4.1. Spark 4.2 has jars of Delta 4.4",
        ),
        (
            "4.4.0",
            "4.3.0",
            "Delta 4.4 has jars for Spark 4.0, 4.1 or 4.2. No Delta release has a jar for Spark "
            "4.3 yet: use Spark 4.0, 4.1 or 4.2 with its delta-spark",
        ),
    ],
)
def test_a_pair_without_a_published_jar_is_refused_with_the_release_to_install(
    delta, spark, message
):
    with pytest.raises(DeltaJarsError) as raised:
        delta_package(delta, spark)
    assert message in str(raised.value)


def test_the_jar_files_of_a_coordinate():
    jar = delta_jar("4.4.1", "4.2.0")
    assert (jar.artifact, jar.version, jar.delta_version, jar.spark_version) == (
        "delta-spark_4.2_2.13",
        "4.4.0",
        "4.4.1",
        "4.2.0",
    )
    assert jar.files == ("delta-spark_4.2_2.13-4.4.0.jar", "delta-storage-4.4.0.jar")


def test_the_default_coordinate_is_that_of_the_installed_packages():
    from importlib.metadata import version

    assert delta_package() == delta_package(version("delta-spark"), version("pyspark"))


def test_without_a_jars_directory_spark_resolves_the_package(monkeypatch, tmp_path):
    monkeypatch.delenv(JARS_ENV, raising=False)
    monkeypatch.setattr(sys, "prefix", str(tmp_path))  # an install without share/mssql_cdc/jars
    assert spark_module._delta_classpath() == ("spark.jars.packages", delta_package(), delta_jar())


def test_a_named_jars_directory_without_jars_is_an_error_not_a_fallback(monkeypatch, tmp_path):
    monkeypatch.setenv(JARS_ENV, str(tmp_path))
    with pytest.raises(FileNotFoundError, match=JARS_ENV):
        spark_module._delta_classpath()


REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("pom", "constraints"),
    [
        ("tools/delta-jars/pom.xml", "constraints.txt"),
        ("tools/delta-jars/spark4.0/pom.xml", "constraints-spark4.0.txt"),
        ("tools/delta-jars/spark4.1/pom.xml", "constraints-spark4.1.txt"),
    ],
)
def test_the_jars_the_checkout_fetches_are_the_published_ones_for_its_pins(pom, constraints):
    """Each venv's Delta jars (tools/delta-jars) are the jar delta_jar() picks for its pins."""
    text = (REPO / pom).read_text()
    props = dict(re.findall(r"<([a-z.]+)>([^<]+)</\1>", text))
    artifact = re.search(r"<artifactId>(delta-spark_[^<]+)</artifactId>", text)[1]
    artifact = artifact.replace("${spark.binary}", props.get("spark.binary", ""))
    artifact = artifact.replace("${scala.binary}", props["scala.binary"])
    pins = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)$", (REPO / constraints).read_text(), re.M))
    jar = delta_jar(pins["delta-spark"], pins["pyspark"])
    assert (artifact, props["delta.version"]) == (jar.artifact, jar.version)
    assert jar.version in PUBLISHED[jar.artifact]


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


_UNRESOLVED = textwrap.dedent(
    """
    import json, sys
    sys.prefix = sys.argv[1]  # as installed by pip: no share/mssql_cdc/jars under the prefix
    from mssql_cdc import spark as spark_module
    from mssql_cdc.delta_jars import DeltaJar
    from mssql_cdc.errors import DeltaJarsError
    # a release no repository has
    missing = DeltaJar("delta-spark_4.2_2.13", "0.0.1", "0.0.1", "4.2.0")
    spark_module.delta_jar = lambda *args: missing
    try:
        spark_module.get_spark("unresolved-test", "local[1]", config={
            "spark.jars.ivySettings": sys.argv[2], "spark.ui.enabled": "false"})
    except DeltaJarsError as exc:
        print(json.dumps({"error": str(exc)}))
    """
)


@pytest.mark.spark
def test_a_jar_spark_cannot_resolve_is_an_error_naming_it_and_the_jars_directory(tmp_path):
    # Ivy with one resolver, an empty directory: the coordinate resolves nowhere, without network
    repo = tmp_path / "empty-repository"
    repo.mkdir()
    settings = tmp_path / "ivysettings.xml"
    pattern = f"{repo}/[organisation]/[module]/[revision]/[artifact]-[revision].[ext]"
    settings.write_text(
        '<ivysettings><settings defaultResolver="empty"/><resolvers>'
        f'<filesystem name="empty"><ivy pattern="{pattern}"/><artifact pattern="{pattern}"/>'
        "</filesystem></resolvers></ivysettings>"
    )
    env = {k: v for k, v in os.environ.items() if k not in (JARS_ENV, "SPARK_REMOTE")}
    done = subprocess.run(
        [sys.executable, "-c", _UNRESOLVED, str(tmp_path / "prefix"), str(settings)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "UNRESOLVED DEPENDENCIES" in done.stderr  # Spark's own account, left on stderr
    error = json.loads(done.stdout.strip().splitlines()[-1])["error"]
    assert error.startswith(
        "local Spark did not start: its JVM exited while resolving the Delta jar "
        "io.delta:delta-spark_4.2_2.13:0.0.1 (spark.jars.packages, for delta-spark 0.0.1 and "
        "pyspark 4.2.0). Spark's messages above say why: 'UNRESOLVED DEPENDENCIES' when no "
        "repository serves it"
    )
    assert (
        "put delta-spark_4.2_2.13-0.0.1.jar and delta-storage-0.0.1.jar in a directory and set "
        "MSSQL_CDC_JARS to it"
    ) in error
