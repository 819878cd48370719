"""Run benchmarks/bench_*.py (`make bench`, `make bench-smoke`): each as its own process, its whole output printed
as one block under `== FILE` with its time, in file order, then how many ran and which failed (exit status 1).

`--jobs N` runs N at a time (their blocks still print in file order). `make bench` keeps 1: its figures are ratios
measured side by side and need the machine to themselves. `make bench-smoke` judges no number, so it runs several
at once."""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def run_one(path: Path) -> tuple[str, int, float]:
    """The benchmark's output (stdout and stderr as they came), its exit status and its time in seconds."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, str(path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
    return done.stdout.decode("utf-8", "replace"), done.returncode, time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path, help="the benchmarks to run")
    parser.add_argument("--jobs", type=int, default=1, help="how many run at once (default 1)")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be 1 or more, not {args.jobs}")
    started = time.monotonic()
    failed = []
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for path, (output, status, took) in zip(args.files, pool.map(run_one, args.files), strict=True):
            print(f"== {path}\n{output}", end="" if output.endswith("\n") or not output else "\n")
            print(f"({path}: {took:.0f} s)\n", flush=True)
            if status:
                failed.append(f"{path} (exit {status})")
    print(f"{len(args.files)} benchmarks in {time.monotonic() - started:.0f} s")
    for name in failed:
        print(f"benchmark failed: {name}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
