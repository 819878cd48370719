"""The cost of the safe reader (graphlemon/beneath.py) beside a plain `open().read()`, measured side by side.

For a file 4 folders deep in a tree the sandbox could write, of 4 KiB, 64 KiB and 1 MiB (a report, a run's output),
prints the median time of one read: plain, through `beneath.read_bytes` with openat2 (where the kernel has it), and
with the per-component fallback; their ratios to plain and what each adds per read in microseconds. And the cost of
listing a tree of 2,000 files (BENCH_SMOKE=1: 200): `os.walk` beside `beneath.walk_files`.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from smoke import sized  # noqa: E402

from graphlemon import beneath  # noqa: E402

READS = sized(400, 20)
FILES = sized(2_000, 200)
SIZES = (4 * 1024, 64 * 1024, 1024 * 1024)


def plain(root: Path, rel: str) -> bytes:
    with open(root / rel, "rb") as fh:
        return fh.read()


def safe(root: Path, rel: str) -> bytes:
    return beneath.read_bytes(root, rel)


def median_us(fn, *args) -> float:
    times = []
    for _ in range(READS):
        started = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e6


def main() -> None:
    has_openat2 = beneath.openat2_available()
    with tempfile.TemporaryDirectory(prefix="bench-safe-reader-") as tmp:
        root = Path(tmp)
        print(f"openat2 on this kernel: {has_openat2}")
        print(f"{'file':>10} {'plain us':>9} {'openat2 us':>11} {'ratio':>6} {'per-part us':>12} {'ratio':>6}")
        for size in SIZES:
            rel = f"a/b/c/d/file-{size}"
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(os.urandom(size))
            p = median_us(plain, root, rel)
            beneath._OPENAT2.available = has_openat2
            o = median_us(safe, root, rel) if has_openat2 else float("nan")
            beneath._OPENAT2.available = False
            f = median_us(safe, root, rel)
            beneath._OPENAT2.available = has_openat2
            print(f"{size // 1024:>8}KiB {p:>9.1f} {o:>11.1f} {o / p:>6.2f} {f:>12.1f} {f / p:>6.2f}")
        tree = root / "tree"
        for i in range(FILES):
            path = tree / f"d{i % 20}" / f"e{i % 7}" / f"f{i}.txt"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("x")
        started = time.perf_counter()
        walked = sum(len(files) for _, _, files in os.walk(tree))
        w = time.perf_counter() - started
        started = time.perf_counter()
        listed = len(beneath.walk_files(root, "tree")[0])
        b = time.perf_counter() - started
        assert walked == listed == FILES
        print(f"listing {FILES:,} files: os.walk {w * 1000:.1f} ms, beneath.walk_files {b * 1000:.1f} ms, "
              f"ratio {b / w:.2f}")


if __name__ == "__main__":
    main()
