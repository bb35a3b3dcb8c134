# mssql-cdc developer commands. `make test` is the one CI runs (.ci/run); it sets up first.
#
#   make setup        Debian packages, .venv, pinned dependencies, native build, Delta jars
#   make demo         setup, then `mssql-cdc demo`: emulator + live workload -> local Delta
#   make test         setup, lint, C tests (normal, ASan+UBSan, valgrind), fuzz smoke, pytest
#   make lint         ruff, ruff format --check, mypy --strict, the import graph (no cycle,
#                     layers; scripts/check_imports.py), clang-format, mkdocs --strict
#   make fuzz         run every libFuzzer target for FUZZ_SECONDS each
#   make chaos        TRIALS randomized fault trials from SEED of KINDS (tests/chaos; docs/
#                     reliability.md): per kind the kills, faults, duplicates and losses; exit 1
#                     on any broken promise
#   make wheel        sdist + one binary wheel per architecture (abi3, manylinux) into dist/
#   make wheel-check  wheel, then install it without a compiler (and the sdist) and query the emulator
#   make test-spark40 / test-spark41   a representative subset of the Spark tests on PySpark
#                     4.0 / 4.1, each in its own venv (scripts/setup-spark.sh; docs/compatibility.md)
#   make install-newest / install-lowest   the wheel installed as a user installs it, into an
#                     empty venv: the newest releases the ranges allow / every range at its floor;
#                     then `mssql-cdc demo` from an empty directory and a test subset
#   make test-cluster the main job's Spark tests on local-cluster[2,1,1024]: executors in JVMs of
#                     their own, with their own Python workers and working directories
SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
VENV ?= .venv
PY := $(VENV)/bin/python
FUZZ_SECONDS ?= 20
FUZZ_JOBS ?= 2
PYTEST_ARGS ?= --durations=25
# pytest-xdist processes; each test file runs whole in one of them (ADR 0071). 1: one process.
PYTEST_WORKERS ?= 2
XDIST = $(if $(filter-out 0 1,$(PYTEST_WORKERS)),-n $(PYTEST_WORKERS) --dist loadfile)
CLANG_FORMAT ?= clang-format
C_FILES = $(shell git ls-files 'native/*.c' 'native/*.h' 2>/dev/null || find native -name '*.[ch]')

.PHONY: setup demo test lint native-test native-asan native-valgrind fuzz pytest wheel wheel-check \
  chaos clean test-spark40 test-spark41 test-spark-minors install-newest install-lowest test-cluster

setup:
	bash scripts/setup.sh

# The emulator with AdventureWorks and a live workload, streamed into local Delta tables;
# DEMO_ARGS passes options (e.g. DEMO_ARGS="--seconds 60 --dir build/demo").
DEMO_ARGS ?=
demo: setup
	$(PY) -m mssql_cdc.cli demo $(DEMO_ARGS)

test: setup lint native-test native-asan native-valgrind fuzz pytest

lint: setup
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/ruff format --check src tests bench
	$(VENV)/bin/mypy
	$(PY) scripts/check_imports.py
	$(CLANG_FORMAT) --dry-run --Werror $(C_FILES)
	$(VENV)/bin/mkdocs build --strict --quiet --site-dir build/site

# The C tests that need a server (test_conn_live) get the emulator from scripts/with-emulator.sh.
WITH_SERVER := scripts/with-emulator.sh

native-test: setup
	cmake -S . -B build/native -G Ninja -DMSSQLCDC_BUILD_TESTS=ON -DMSSQLCDC_WERROR=ON >/dev/null
	cmake --build build/native
	$(WITH_SERVER) ctest --test-dir build/native --output-on-failure

native-asan: setup
	cmake -S . -B build/asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DMSSQLCDC_BUILD_TESTS=ON \
	  -DMSSQLCDC_SANITIZE=ON -DMSSQLCDC_WERROR=ON >/dev/null
	cmake --build build/asan
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  $(WITH_SERVER) ctest --test-dir build/asan --output-on-failure

native-valgrind: native-test
	$(WITH_SERVER) ctest --test-dir build/native --output-on-failure -T memcheck \
	  >build/native/memcheck.log || { cat build/native/memcheck.log; exit 1; }
	@tail -n 3 build/native/memcheck.log

# Each libFuzzer target runs for FUZZ_SECONDS on a copy of its committed seed corpus (new inputs
# land in build/fuzz/corpus, not in the repository), FUZZ_JOBS targets at once (scripts/fuzz.sh).
fuzz:
	CC=clang cmake -S . -B build/fuzz -G Ninja -DMSSQLCDC_FUZZ=ON -DMSSQLCDC_WERROR=ON >/dev/null
	cmake --build build/fuzz
	FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_JOBS=$(FUZZ_JOBS) bash scripts/fuzz.sh

pytest: setup
	$(PY) -m pytest $(XDIST) $(PYTEST_ARGS)

# Randomized fault trials (tests/chaos/run.py); trial i has seed SEED + i and, of KINDS (all, or
# a comma-separated list: stream, bootstrap_full, ..., silver_type2), the kind (SEED + i) mod the
# number of kinds; a failing one prints `make chaos TRIALS=1 SEED=<its seed> KINDS=<its kind>`.
# CHAOS_ARGS: e.g. "--seconds 12 --dir build/chaos --minutes 60".
TRIALS ?= 10
SEED ?= 1
KINDS ?= all
CHAOS_ARGS ?=
chaos: setup
	$(PY) tests/chaos/run.py --trials $(TRIALS) --seed $(SEED) --kinds $(KINDS) $(CHAOS_ARGS)

# The sdist and a cp310-abi3 manylinux_2_17 wheel per architecture (zig's clang, the node's
# OpenSSL 3; ADR 0050), checked with auditwheel and abi3audit. WHEEL_ARCHES="x86_64" for one.
wheel: setup
	bash scripts/build-wheel.sh

# The wheel installed into fresh venvs with no compiler on PATH (each CPython 3.10+ found), and
# the sdist built by pip, each importing and querying the emulator over TLS.
wheel-check: wheel
	bash scripts/check-wheel.sh

# ---- Older Spark minors (docs/compatibility.md) ----------------------------------------------
# The main suite runs on Spark 4.2 (.venv). On 4.0 and 4.1 CI runs this subset, one or two tests
# per layer: the Spark-minor shims and the readers against the server, the stream (batches,
# resume, the legacy reader), the snapshot source, the Delta sink, to_delta with facts, a stream
# going on from a seeded checkpoint (Spark's checkpoint format), the database stream (its clock
# source, both ways of reading a table's range).
SPARK_MINOR_TESTS ?= \
  tests/source/test_compat.py \
  tests/source/test_reader_server.py \
  tests/source/test_stream_spark.py::test_available_now_reads_the_exact_history_in_batches_and_resumes \
  tests/source/test_stream_spark.py::test_snapshot_source_reads_current_rows_stamped_with_max_lsn \
  tests/source/test_stream_spark_legacy.py \
  tests/sink/test_delta_sink.py::test_an_empty_first_batch_writes_a_facts_row_and_no_bronze_table \
  tests/sink/test_local_rows.py \
  tests/sink/test_state_warmup.py::test_the_next_commit_finds_the_state_computed \
  tests/sink/test_state_warmup.py::test_within_a_batch_the_facts_commit_finds_its_state_and_nothing_is_computed_after \
  tests/pipeline/test_to_delta.py::test_smallest_stream_writes_the_history_once_with_a_facts_row_per_batch \
  tests/sink/test_seeded_checkpoint.py \
  tests/pipeline/test_database_stream.py::test_every_table_lands_once_and_a_rerun_reads_only_what_is_new \
  tests/pipeline/test_database_stream.py::test_max_commits_per_batch_bounds_every_table_s_batch

test-spark40 test-spark41: test-spark4%:
	bash scripts/setup-spark.sh 4.$*
	.venv-spark4.$*/bin/python -m pytest -p no:cacheprovider $(XDIST) $(SPARK_MINOR_TESTS) $(PYTEST_ARGS)

test-spark-minors: test-spark40 test-spark41

# ---- Installing like a user (docs/development.md; ADR 0190) -----------------------------------
# The wheel in dist/ (built for this architecture when there is none) with INSTALL_EXTRAS into an
# empty venv, no checkout involved: newest, without constraints (the newest releases the ranges
# of pyproject.toml allow, newest CPython found); lowest, every range at its floor (Python 3.10).
# Then `mssql-cdc demo --seconds 10` from an empty directory and INSTALL_TESTS against it.
install-newest install-lowest: install-%: setup
	bash scripts/check-install.sh $*

# ---- Executors that are not the driver (docs/development.md; ADR 0192) ----------------------
# The main job's Spark tests on Spark's local-cluster master: two executors, each a JVM of its
# own with one core and 1024 MB, its own Python workers and its own working directory (under
# PySpark's work/, emptied first; the executors' logs stay there), as on a cluster. CLUSTER_VENV
# picks the environment: .venv (the editable build, Delta jars on disk), or a user's install
# (CI: build/install-newest/venv, the wheel, Delta resolved by Spark with a new user's Ivy home
# in build/cluster-home). One pytest process: the driver and two executors already take more
# than this 2-core machine's cores.
CLUSTER_MASTER ?= local-cluster[2,1,1024]
CLUSTER_VENV ?= $(VENV)
CLUSTER_TESTS ?= \
  tests/pipeline/test_to_delta.py::test_smallest_stream_writes_the_history_once_with_a_facts_row_per_batch \
  tests/source/test_stream_spark.py::test_available_now_reads_the_exact_history_in_batches_and_resumes \
  tests/snapshots/test_bootstrap.py \
  tests/snapshots/test_backfill.py::test_chunked_snapshot_reads_every_key_once_while_the_table_changes[int] \
  tests/snapshots/test_recovery.py::test_resnapshot_after_purge_opens_generation_one \
  tests/silver/test_apply.py

test-cluster: setup
	rm -rf "$$($(CLUSTER_VENV)/bin/python -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')/work"
	mkdir -p build/cluster-home
	SPARK_LOCAL_IP=127.0.0.1 MSSQL_CDC_TEST_MASTER='$(CLUSTER_MASTER)' \
	  JDK_JAVA_OPTIONS="-Duser.home=$(CURDIR)/build/cluster-home" \
	  $(CLUSTER_VENV)/bin/python -m pytest -p no:cacheprovider $(CLUSTER_TESTS) $(PYTEST_ARGS)

clean:
	rm -rf build
