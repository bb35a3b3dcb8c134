"""Which Delta Lake jar local Spark gets for an installed pyspark and delta-spark pair.

The delta-spark wheel holds only Python; the JVM side is a jar on Maven Central, and not every
pair that pip accepts has one (docs/installation.md, "Spark and Delta versions"):

* Delta 4.0.x publishes ``io.delta:delta-spark_2.13``, built for Spark 4.0.
* From Delta 4.1 on, each release publishes one artifact per Spark minor it is built for,
  ``io.delta:delta-spark_<spark major.minor>_2.13`` (the plain ``delta-spark_2.13`` name stays,
  for the release's default Spark minor only).
* A Python patch release can come without jars: delta-spark 4.4.1 is on PyPI, but no
  ``delta-spark_*:4.4.1`` jar is on Maven Central, whose newest 4.4 jar is 4.4.0.

:data:`PUBLISHED` records which releases Maven Central serves for each artifact, as read from
its ``maven-metadata.xml`` files; :func:`delta_jar` picks from it: the installed release's own
jar, else the newest published patch of the same Delta minor for the same Spark minor (the
Python API of a patch release calls the same JVM classes). A pair with no published jar of its
Delta minor is an error naming the delta-spark release to install. Releases newer than the
table (a Delta minor it does not list) get their own coordinate unchanged.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version

from mssql_cdc.errors import DeltaJarsError

__all__ = ["PUBLISHED", "DeltaJar", "delta_jar", "installed_versions"]

_log = logging.getLogger("mssql_cdc.spark")

#: The Scala binary version of every Spark 4 build (Spark 4 dropped Scala 2.12)
SCALA = "2.13"

#: Delta releases Maven Central serves, per artifact of the group ``io.delta`` (its
#: ``maven-metadata.xml``, read 2026-12-05; release candidates left out). ``delta-spark_2.13``
#: is listed for Delta 4.0 only: later releases publish it for their default Spark minor, which
#: the Spark-suffixed artifact names without ambiguity.
PUBLISHED: Mapping[str, tuple[str, ...]] = {
    f"delta-spark_{SCALA}": ("4.0.0", "4.0.1"),
    f"delta-spark_4.0_{SCALA}": ("4.1.0", "4.2.0", "4.3.0", "4.3.1", "4.4.0"),
    f"delta-spark_4.1_{SCALA}": ("4.1.0", "4.2.0", "4.3.0", "4.3.1", "4.4.0"),
    f"delta-spark_4.2_{SCALA}": ("4.4.0",),
}

_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")

Release = tuple[int, int, int]


def _parse(text: str, what: str) -> Release:
    match = _VERSION.match(text)
    if match is None:
        raise ValueError(f"{what} version {text!r} is not of the form major.minor[.patch]")
    return int(match[1]), int(match[2]), int(match[3] or 0)


def _artifact(delta: Release, spark_minor: str) -> str:
    """The artifact of a Delta release built for a Spark minor."""
    if delta[:2] < (4, 1):
        return f"delta-spark_{SCALA}"  # Delta 4.0: one artifact, built for Spark 4.0
    return f"delta-spark_{spark_minor}_{SCALA}"


def _spark_minor(artifact: str) -> str:
    """The Spark minor an artifact of :data:`PUBLISHED` is built for."""
    parts = artifact.split("_")
    return parts[1] if len(parts) == 3 else "4.0"


def _jars() -> list[tuple[str, Release, str]]:
    """Every published jar as ``(Spark minor, Delta release, release text)``."""
    return [
        (_spark_minor(artifact), _parse(release, "Delta"), release)
        for artifact, releases in PUBLISHED.items()
        for release in releases
    ]


def _or(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def _minors(releases: list[Release]) -> str:
    return _or([f"{m[0]}.{m[1]}" for m in sorted({r[:2] for r in releases})])


@dataclass(frozen=True)
class DeltaJar:
    """The Delta jar for a delta-spark release on a Spark release.

    Attributes:
        artifact: the Maven artifact id, e.g. ``delta-spark_4.2_2.13``.
        version: the jar's release, e.g. ``4.4.0``.
        delta_version: the delta-spark (Python) release it serves, e.g. ``4.4.1``.
        spark_version: the Spark release, e.g. ``4.2.0``.
    """

    artifact: str
    version: str
    delta_version: str
    spark_version: str

    @property
    def coordinate(self) -> str:
        """``io.delta:<artifact>:<version>``, the form of ``spark.jars.packages``."""
        return f"io.delta:{self.artifact}:{self.version}"

    @property
    def files(self) -> tuple[str, str]:
        """The two jars a local session needs: Delta's Spark jar and its storage jar."""
        return f"{self.artifact}-{self.version}.jar", f"delta-storage-{self.version}.jar"


def installed_versions() -> tuple[str, str]:
    """The installed ``(delta-spark, pyspark)`` releases.

    Raises:
        ModuleNotFoundError: one of them is not installed; the message names the extra.
    """
    try:
        return version("delta-spark"), version("pyspark")
    except PackageNotFoundError as exc:
        raise ModuleNotFoundError(
            f"{exc.name or exc} is not installed: pip install 'mssql-cdc[spark]' "
            "(or a matching pyspark and delta-spark pair)"
        ) from exc


def delta_jar(delta_version: str | None = None, spark_version: str | None = None) -> DeltaJar:
    """Return the published Delta jar for a delta-spark and a Spark release.

    Args:
        delta_version: the delta-spark release; default: the installed ``delta-spark``.
        spark_version: the Spark release; default: the installed ``pyspark``.

    Returns:
        The jar of ``delta_version`` built for the Spark minor of ``spark_version`` when Maven
        Central has it (or when :data:`PUBLISHED` does not know that Delta minor yet); else the
        newest published jar of the same Delta minor for that Spark minor, which an INFO line
        of the ``mssql_cdc.spark`` logger names.

    Raises:
        DeltaJarsError: no jar of that Delta minor is published for that Spark minor (e.g.
            delta-spark 4.0.1 on Spark 4.2); the message names the Delta minors that have one.
        ModuleNotFoundError: a version is not given and its package is not installed.
        ValueError: a version is not of the form ``major.minor[.patch]``.
    """
    if delta_version is None or spark_version is None:
        installed_delta, installed_spark = installed_versions()
        delta_version = delta_version or installed_delta
        spark_version = spark_version or installed_spark
    delta = _parse(delta_version, "delta-spark")
    spark = _parse(spark_version, "Spark")
    spark_minor = f"{spark[0]}.{spark[1]}"
    artifact = _artifact(delta, spark_minor)
    jars = _jars()
    if delta[:2] not in {release[:2] for _, release, _ in jars}:
        return DeltaJar(artifact, delta_version, delta_version, spark_version)
    same_minor = sorted(
        (release, text)
        for minor, release, text in jars
        if minor == spark_minor and release[:2] == delta[:2] and release <= delta
    )
    if not same_minor:
        for_spark = [release for minor, release, _ in jars if minor == spark_minor]
        for_delta = sorted({minor for minor, release, _ in jars if release[:2] == delta[:2]})
        fix = (
            f"Spark {spark_minor} has jars of Delta {_minors(for_spark)}: install that "
            f"delta-spark (pip install 'delta-spark=={max(for_spark)[0]}.{max(for_spark)[1]}.*')"
            if for_spark
            else f"No Delta release has a jar for Spark {spark_minor} yet: use Spark "
            f"{_or(sorted({minor for minor, _, _ in jars}))} with its delta-spark"
        )
        raise DeltaJarsError(
            f"no Delta jar of delta-spark {delta_version} is published for Spark {spark_minor} "
            f"(pyspark {spark_version}); Delta {delta[0]}.{delta[1]} has jars for Spark "
            f"{_or(for_delta)}. {fix} (docs/installation.md, Spark and Delta versions)"
        )
    chosen = same_minor[-1][1]
    if chosen != delta_version:
        _log.info(
            "delta-spark %s has no jar for Spark %s on Maven Central: using io.delta:%s:%s, the "
            "newest published jar of Delta %d.%d",
            delta_version,
            spark_minor,
            artifact,
            chosen,
            delta[0],
            delta[1],
        )
    return DeltaJar(artifact, chosen, delta_version, spark_version)
