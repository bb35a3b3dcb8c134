#!/usr/bin/env bash
# Runs every libFuzzer target built in build/fuzz (make fuzz) for FUZZ_SECONDS each, up to
# FUZZ_JOBS targets at once (each target is one process on one core, so on a machine with N
# cores N targets at once run as many inputs per target as one at a time, in 1/N of the time).
# Each target starts from its committed seed corpus (native/tests/fuzz/corpus/<target>) and puts
# new inputs in build/fuzz/corpus/<target>, not in the repository. A crash prints the tail of
# that target's log (build/fuzz/<target>.log) and fails the run.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
seconds=${FUZZ_SECONDS:-20}
jobs=${FUZZ_JOBS:-2}

run_one() { # target path -> 0 when the target ran its time without finding a failure
  local target=$1 name
  name=$(basename "$target")
  mkdir -p "build/fuzz/corpus/$name"
  if "$target" -max_total_time="$seconds" -print_final_stats=0 \
    "build/fuzz/corpus/$name" "native/tests/fuzz/corpus/$name" 2>"build/fuzz/$name.log"; then
    echo "fuzz: $name ran $(grep -oE 'Done [0-9]+ runs' "build/fuzz/$name.log")"
  else
    echo "fuzz: $name FAILED:"
    tail -n 40 "build/fuzz/$name.log"
    touch "build/fuzz/$name.failed"
  fi
}

targets=(build/fuzz/native/tests/fuzz/fuzz_*)
[ -x "${targets[0]}" ] || { echo "fuzz: no targets in build/fuzz (make fuzz builds them)" >&2; exit 1; }
rm -f build/fuzz/*.failed
for target in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  run_one "$target" &
done
wait
if compgen -G "build/fuzz/*.failed" >/dev/null; then exit 1; fi
