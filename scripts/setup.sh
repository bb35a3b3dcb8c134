#!/usr/bin/env bash
# One-step set-up for a fresh machine, safe and quick to re-run:
#   1. Debian packages the build and the tests need (only the missing ones are installed);
#   2. .venv with the package (editable, compiling the C core) and the pinned dependencies;
#   3. the Delta Lake jars, fetched with Maven into .venv/share/mssql_cdc/jars, where
#      mssql_cdc.spark.get_spark() finds them (Spark never resolves packages at run time).
# Each step is skipped when what it would produce is already up to date (stamp files in .venv).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
venv="${MSSQL_CDC_VENV:-$root/.venv}"
python="${PYTHON:-python3}"
log() { printf 'setup: %s\n' "$*" >&2; }
# Another Spark minor's venv (scripts/setup-spark.sh) passes its own pins and Delta jars' pom.
constraints="${MSSQL_CDC_CONSTRAINTS:-constraints.txt}"
delta_pom="${MSSQL_CDC_DELTA_POM:-tools/delta-jars/pom.xml}"

# --- 1. Debian packages ----------------------------------------------------------------------
debs=(build-essential cmake ninja-build pkg-config libssl-dev libcmocka-dev clang
      libclang-rt-14-dev clang-format valgrind openjdk-17-jdk-headless maven
      libltdl7 libkrb5-3 libgssapi-krb5-2)
missing=()
if command -v dpkg-query >/dev/null 2>&1; then
  for p in "${debs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if ((${#missing[@]})); then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    log "installing Debian packages: ${missing[*]}"
    $sudo apt-get update -q >/dev/null
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends \
      "${missing[@]}" >/dev/null
  fi
else
  log "not a Debian system: make sure these are installed: ${debs[*]}"
fi

# --- 2. Python environment -------------------------------------------------------------------
hash_of() { cat "$@" 2>/dev/null | sha256sum | cut -d' ' -f1; }
if [ ! -x "$venv/bin/python" ]; then
  log "creating $venv"
  "$python" -m venv "$venv"
fi
pip=("$venv/bin/python" -m pip --disable-pip-version-check -q)
# The project's own builds treat compiler warnings as errors (a user's pip install does not).
export SKBUILD_CMAKE_DEFINE="MSSQLCDC_WERROR=ON"

# The C core is compiled into the editable install, so a change to a native file needs a
# rebuild; a change to the pinned dependencies needs a full install (which also rebuilds).
deps_hash=$(hash_of pyproject.toml "$constraints")
native_hash=$(find native CMakeLists.txt -type f \( -name '*.c' -o -name '*.h' -o -name '*.cmake' \
  -o -name 'CMakeLists.txt' \) -print0 | sort -z | xargs -0 cat | sha256sum | cut -d' ' -f1)
if [ "$(cat "$venv/.deps-stamp" 2>/dev/null)" != "$deps_hash" ]; then
  log "installing pinned dependencies and building the native extension"
  # PySpark is published as an sdist only: it is built with --no-build-isolation below, so the
  # venv needs a setuptools with bdist_wheel built in (a fresh venv's may be too old) and wheel.
  "${pip[@]}" install -c "$constraints" pip setuptools wheel scikit-build-core
  "${pip[@]}" install -c "$constraints" --no-build-isolation -e ".[spark,emulator,dev,docs]"
  echo "$deps_hash" >"$venv/.deps-stamp"
  echo "$native_hash" >"$venv/.native-stamp"
elif [ "$(cat "$venv/.native-stamp" 2>/dev/null)" != "$native_hash" ]; then
  log "rebuilding the native extension"
  "${pip[@]}" install -c "$constraints" --no-build-isolation --no-deps -e .
  echo "$native_hash" >"$venv/.native-stamp"
fi

# --- 3. Delta jars ---------------------------------------------------------------------------
jars="$venv/share/mssql_cdc/jars"
jars_hash=$(hash_of "$delta_pom" "$constraints")
if [ "$(cat "$venv/.jars-stamp" 2>/dev/null)" != "$jars_hash" ]; then
  log "fetching the Delta jars with Maven into $jars"
  rm -rf "$jars" && mkdir -p "$jars"
  # Maven 3.8 prints colour resets even in batch mode: stripped, so that logs stay plain text
  mvn -B -q -f "$delta_pom" dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$jars" 2>&1 | sed -e 's/\x1b\[[0-9;]*m//g'
  # Drop what PySpark already ships (Scala, Hadoop, Jackson, Parquet...): one copy of each
  # library on the class path, PySpark's.
  "$venv/bin/python" - "$jars" <<'PY'
import pathlib, re, sys
import pyspark
ours = pathlib.Path(sys.argv[1])
spark_jars = pathlib.Path(pyspark.__file__).parent / "jars"
def artifact(name: str) -> str:
    return re.sub(r"-\d[^-]*(-[A-Za-z0-9.]+)?\.jar$", "", name)
shipped = {artifact(p.name) for p in spark_jars.glob("*.jar")}
for jar in ours.glob("*.jar"):
    if artifact(jar.name) in shipped:
        jar.unlink()
kept = sorted(p.name for p in ours.glob("*.jar"))
if not any(n.startswith("delta-spark_") for n in kept):
    sys.exit("setup: delta-spark jar missing after the Maven fetch")
print("setup: Delta jars: " + ", ".join(kept), file=sys.stderr)
PY
  echo "$jars_hash" >"$venv/.jars-stamp"
fi
log "ready ($venv)"
