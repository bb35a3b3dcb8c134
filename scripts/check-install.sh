#!/usr/bin/env bash
# Installs the wheel the way a user does and runs what a user runs (make install-newest,
# make install-lowest; ADR 0190):
#
#   scripts/check-install.sh newest   no constraints: the newest releases the ranges allow
#   scripts/check-install.sh lowest   every range of pyproject.toml at its floor
#
# 1. the wheel of this machine's architecture from dist/ (`make wheel`; built here, for this
#    architecture only, when dist/ has none) goes into an empty venv with the extras
#    INSTALL_EXTRAS (default spark,emulator,cli,report,azure). newest: `pip install` with no
#    constraints file, on the newest CPython found (INSTALL_PYTHON, else python3.13 to 3.11);
#    lowest: with a constraints file of every floor (scripts/dependency_ranges.py lowest), on
#    Python 3.10, the floor of requires-python (INSTALL_PYTHON, else python3.10, else python3);
# 2. the versions it resolved, checked against the ranges (scripts/dependency_ranges.py report);
# 3. `mssql-cdc demo --seconds 10` from an empty directory: nothing of the checkout is used,
#    local Spark gets its Delta jar from Maven Central (spark.jars.packages), and the closing
#    hint must name this venv's mssql-cdc;
# 4. a small test subset (INSTALL_TESTS) from the checkout's tests/ against the installed
#    package, with pytest, pytest-xdist and hypothesis (the dev extra's ranges, the newest for
#    the venv's Python) added to the venv; the step fails if adding them changed a version the
#    install resolved.
# Everything is under build/install-<mode>/ (the venv, the demo's output, the logs).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
mode=${1:-}
case $mode in
  newest) pythons=${INSTALL_PYTHON:-python3.13 python3.12 python3.11} ;;
  lowest) pythons=${INSTALL_PYTHON:-python3.10} ;;
  *) echo "check-install: usage: $0 newest|lowest" >&2; exit 2 ;;
esac
extras=${INSTALL_EXTRAS:-spark,emulator,cli,report,azure}
# the suites that need no Spark session, then one streaming test
no_spark="tests/api tests/client tests/emulator tests/integration/test_delta_packages.py
  tests/integration/test_connect_server_port.py tests/snapshots/test_chunk_plan.py
  tests/pipeline/test_start_plan.py tests/pipeline/test_to_delta_sink.py
  tests/validate/test_chunk_checks.py tests/validate/test_reconcile_rules.py
  tests/sink/test_snapshot_events.py tests/sink/test_missing_log_locally.py
  tests/source/test_errors.py tests/source/test_timezones.py tests/source/test_source_layout.py
  tests/source/test_metrics_dir.py $(echo tests/cli/test_{cli_errors,cli_invocation,cli_spark,demo_progress,report_figures,snapshot_watch,status_figures,stream_progress}.py)"
tests=${INSTALL_TESTS:-$no_spark \
  tests/source/test_stream_spark.py::test_available_now_reads_the_exact_history_in_batches_and_resumes}
workers=${INSTALL_WORKERS:-2}
demo_seconds=${INSTALL_DEMO_SECONDS:-10}
dev_python="${MSSQL_CDC_VENV:-$root/.venv}/bin/python" # runs dependency_ranges.py
work="$root/build/install-$mode"
venv="$work/venv"
log() { printf 'install-%s: %s\n' "$mode" "$*" >&2; }
start=$SECONDS

# An interpreter by name: on PATH, or one of pyenv's versions (its shims answer only for the
# selected version), under PYENV_ROOT, ~/.pyenv, or the root of the shim PATH found (CI's HOME
# is empty, so that is where its pyenv is).
find_python() {
  local name=$1 found root candidate
  found=$(command -v "$name" 2>/dev/null || true)
  if [ -n "$found" ] && "$found" -c '' 2>/dev/null; then
    echo "$found"
    return
  fi
  for root in "${PYENV_ROOT:-}" "$HOME/.pyenv" "${found:+$(dirname "$(dirname "$found")")}"; do
    [ -n "$root" ] || continue
    for candidate in "$root"/versions/"${name#python}".*/bin/"$name"; do
      [ -x "$candidate" ] && "$candidate" -c '' 2>/dev/null && { echo "$candidate"; return; }
    done
  done
}
base=
for name in $pythons; do
  base=$(find_python "$name")
  [ -n "$base" ] && break
done
if [ -z "$base" ]; then
  log "none of $pythons found: using python3"
  base=python3
fi

arch=$(uname -m)
wheel=$(ls dist/mssql_cdc-*-cp310-abi3-manylinux*_"$arch".whl 2>/dev/null | head -n 1 || true)
if [ -z "$wheel" ]; then
  log "no $arch wheel in dist/: building it (make wheel)"
  WHEEL_ARCHES=$arch bash scripts/build-wheel.sh
  wheel=$(ls dist/mssql_cdc-*-cp310-abi3-manylinux*_"$arch".whl | head -n 1)
fi

rm -rf "$work"
mkdir -p "$work/empty" "$work/home"
# A new user's home for the JVM, whose user.home comes from the password database, not HOME:
# Spark's Ivy keeps its cache there and also reads <user.home>/.m2/repository, where a Maven
# run on this machine may have left a pom without its jar (docs/installation.md).
export JDK_JAVA_OPTIONS="-Duser.home=$work/home"
"$base" -m venv "$venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check)
constraints=()
if [ "$mode" = lowest ]; then
  "$dev_python" scripts/dependency_ranges.py lowest "$extras" >"$work/lowest-constraints.txt"
  constraints=(-c "$work/lowest-constraints.txt")
fi
log "pip install $(basename "$wheel")[$extras] ${constraints[*]} ($("$venv/bin/python" -V))"
"${pip[@]}" install "${constraints[@]}" "$wheel[$extras]" >"$work/install.log" 2>&1 \
  || { cat "$work/install.log"; exit 1; }
"${pip[@]}" check
log "installed in $((SECONDS - start)) s; resolved:"
"$dev_python" scripts/dependency_ranges.py report "$mode" "$extras" "$venv" | sed 's/^/  /'
"${pip[@]}" freeze --all >"$work/freeze.txt"

# --- the demo, from an empty directory, as a user runs it -------------------------------------
demo_start=$SECONDS
mkdir -p "$work/tmp" # the demo's default directory, a new temporary one, lands here
(cd "$work/empty" && env -u MSSQL_CDC_JARS -u SPARK_HOME -u PYSPARK_PYTHON TMPDIR="$work/tmp" \
  "$venv/bin/mssql-cdc" demo --seconds "$demo_seconds") >"$work/demo.log" 2>&1 \
  || { cat "$work/demo.log"; log "the demo failed"; exit 1; }
tail -n 12 "$work/demo.log" | sed 's/^/  demo: /'
hint="  $venv/bin/mssql-cdc status --facts "
if ! grep -qF -- "$hint" "$work/demo.log"; then
  log "the demo's closing hint does not name $venv/bin/mssql-cdc"
  exit 1
fi
# Nothing of the demo's in the directory it ran in. PySpark 4.0.0's first SQL job makes
# ./artifacts there itself, for the session's artifacts, which its JVM empties as it exits (seen
# with a bare SparkSession; 4.2.0 does not): that one is Spark's.
written=$(ls -A "$work/empty" | grep -vx artifacts || true)
if [ -n "$written" ]; then
  log "the demo wrote into the directory it ran in: $(echo "$written" | tr '\n' ' ')"
  exit 1
fi
log "demo passed in $((SECONDS - demo_start)) s"

# --- a test subset against the installed package ----------------------------------------------
mapfile -t tools < <("$dev_python" scripts/dependency_ranges.py dev pytest pytest-xdist hypothesis)
"${pip[@]}" install -q "${tools[@]}" >"$work/test-tools.log" 2>&1 \
  || { cat "$work/test-tools.log"; exit 1; }
changed=$(
  "${pip[@]}" freeze --all | diff "$work/freeze.txt" - | sed -n 's/^< //p' || true
)
if [ -n "$changed" ]; then
  log "installing the test tools changed the resolved versions: $changed"
  exit 1
fi
where=$("$venv/bin/python" -c 'import mssql_cdc; print(mssql_cdc.__file__)')
case $where in
  "$venv"/*) ;;
  *) log "the tests would import mssql_cdc from $where, not from the venv"; exit 1 ;;
esac
xdist=()
[ "$workers" -gt 1 ] && xdist=(-n "$workers" --dist loadfile)
# shellcheck disable=SC2086  # INSTALL_TESTS is a list of words
env -u MSSQL_CDC_JARS "$venv/bin/python" -m pytest -p no:cacheprovider "${xdist[@]}" $tests \
  ${INSTALL_PYTEST_ARGS:---durations=10}
log "passed in $((SECONDS - start)) s"
