"""Runs trials of the fault harness (``make chaos TRIALS=N SEED=S``): trial ``i`` has seed
``S + i``. Prints each trial, then the table; exits 1 if any trial found a duplicate, a loss or
another broken promise, printing its seed and the command that replays it."""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from chaos_harness import DEFAULT_LARGE, DEFAULT_SECONDS, replay_command, run_trial, table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--seconds", type=float, default=DEFAULT_SECONDS, help="workload seconds per trial"
    )
    parser.add_argument(
        "--large", type=int, default=DEFAULT_LARGE, help="most changes of a large transaction"
    )
    parser.add_argument("--dir", type=Path, default=None, help="keep each trial's files here")
    parser.add_argument(
        "--minutes", type=float, default=None, help="start no trial after this many minutes"
    )
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    root = args.dir or Path(tempfile.mkdtemp(prefix="mssql-cdc-chaos-"))
    results = []
    began = time.monotonic()
    for i in range(args.trials):
        seed = args.seed + i
        if args.minutes is not None and time.monotonic() - began > args.minutes * 60:
            print(f"time budget of {args.minutes} minutes spent: {i} trials run")
            break
        try:
            result = run_trial(seed, root / f"trial-{seed}", seconds=args.seconds, large=args.large)
        except KeyboardInterrupt:  # SIGINT or SIGTERM: the table of the finished trials
            print(f"interrupted: {i} trials finished")
            break
        results.append(result)
        status = "ok" if result.ok else "INCONCLUSIVE" if result.inconclusive else "FAILED"
        faults = (
            ", ".join(f"{k} {n} (hit {result.fired[k]})" for k, n in sorted(result.faults.items()))
            or "none"
        )
        print(
            f"trial {i + 1}/{args.trials} {status} in {result.seconds:.0f} s, "
            f"{result.changes} changes, {result.batches} batches, "
            f"{result.query_failures} query restarts; faults: {faults}\n  {result.description}",
            flush=True,
        )
        for problem in result.problems:
            print(f"  {problem}", flush=True)
        if not result.ok:
            replay = replay_command(seed, seconds=args.seconds, large=args.large)
            print(f"  replay: {replay}  (files: {root / f'trial-{seed}'})")
    print()
    print(table(results))
    failed = [r for r in results if not r.ok]
    for r in failed:
        replay = replay_command(r.seed, seconds=args.seconds, large=args.large)
        print(f"FAILED seed {r.seed}: replay with `{replay}`")
    if args.dir is None and not failed:
        shutil.rmtree(root, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
