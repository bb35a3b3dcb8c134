"""Runs trials of the fault harness (``make chaos TRIALS=N SEED=S KINDS=k1,k2``): trial ``i``
has seed ``S + i`` and the kind ``kinds[(S + i) % len(kinds)]`` (``KINDS=all``: every kind, in
``kinds.TRIAL_KINDS`` order; the ``database`` kind, added last, changed which kind a seed gets
under ``all``, not under a list of the older kinds). Prints each trial (and its notes: what
breaks no promise, such as a database stream's table parked), then the tables; exits 1 if any
trial found a duplicate, a loss or another broken promise, printing its seed and the command
that replays it."""

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
from kinds import TRIAL_KINDS, kind_of


def parse_kinds(text: str) -> list[str]:
    """``all`` or a comma-separated list of trial kinds (kept in ``TRIAL_KINDS`` order)."""
    if text == "all":
        return list(TRIAL_KINDS)
    asked = [k.strip() for k in text.split(",") if k.strip()]
    unknown = [k for k in asked if k not in TRIAL_KINDS]
    if unknown or not asked:
        raise argparse.ArgumentTypeError(
            f"unknown trial kinds {unknown or [text]}; kinds: all, {', '.join(TRIAL_KINDS)}"
        )
    return [k for k in TRIAL_KINDS if k in asked]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--kinds", type=parse_kinds, default=list(TRIAL_KINDS), help="all, or k1,k2,..."
    )
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
    root = (args.dir or Path(tempfile.mkdtemp(prefix="mssql-cdc-chaos-"))).resolve()
    results = []
    began = time.monotonic()

    def replay(seed: int, kind: str) -> str:
        return replay_command(seed, kind=kind, seconds=args.seconds, large=args.large)

    for i in range(args.trials):
        seed = args.seed + i
        kind = kind_of(seed, args.kinds)
        if args.minutes is not None and time.monotonic() - began > args.minutes * 60:
            print(f"time budget of {args.minutes} minutes spent: {i} trials run")
            break
        try:
            result = run_trial(
                seed,
                root / f"trial-{seed}",
                kind=kind,
                seconds=args.seconds,
                large=args.large,
            )
        except KeyboardInterrupt:  # SIGINT or SIGTERM: the table of the finished trials
            print(f"interrupted: {i} trials finished")
            break
        results.append(result)
        status = "ok" if result.ok else "INCONCLUSIVE" if result.inconclusive else "FAILED"
        faults = (
            ", ".join(f"{k} {n} (hit {result.fired[k]})" for k, n in sorted(result.faults.items()))
            or "none"
        )
        checked = ", ".join(f"{n} {what}" for what, n in sorted(result.checked.items()))
        print(
            f"trial {i + 1}/{args.trials} seed {seed} {kind} {status} in {result.seconds:.0f} s, "
            f"{result.kills} kills ({'; '.join(result.killed_in) or '-'}), "
            f"{result.query_failures} restarts; faults: {faults}\n  checked: {checked}\n"
            f"  {result.description}",
            flush=True,
        )
        for problem in result.problems:
            print(f"  {problem}", flush=True)
        for note in result.notes:
            print(f"  note: {note}", flush=True)
        if not result.ok:
            print(f"  replay: {replay(seed, kind)}  (files: {root / f'trial-{seed}'})")
        elif args.dir is None:  # a passing trial's files go at once (a few MB each)
            shutil.rmtree(root / f"trial-{seed}", ignore_errors=True)
    print()
    print(table(results))
    failed = [r for r in results if not r.ok]
    for r in failed:
        print(f"FAILED seed {r.seed} ({r.kind}): replay with `{replay(r.seed, r.kind)}`")
    if args.dir is None and not failed:
        shutil.rmtree(root, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
