"""Ledger benchmark: append throughput (1 writer, 4 concurrent writers) and folding 1,000,000 bug events.

Printed, never asserted. The fold is timed side by side with the same fold done by
pandas (`read_json(lines=True)` + `groupby(bug_id).last()`, which keeps the last
non-null value of each field — the same "None = unchanged" rule as `bugs.fold`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from smoke import sized

from graphlemon.bugs import fold
from graphlemon.ledger import Ledger, encode
from graphlemon.models import BugEvent, TimelineEvent

APPENDS = int(os.environ.get("BENCH_APPENDS", sized(2000, 100)))
BUG_EVENTS = int(os.environ.get("BENCH_BUG_EVENTS", sized(1_000_000, 20_000)))

WRITER = textwrap.dedent(
    """
    import sys
    from graphlemon.ledger import Ledger
    from graphlemon.models import TimelineEvent
    ledger = Ledger(sys.argv[1])
    for i in range(int(sys.argv[2])):
        ledger.append(TimelineEvent(event="tick", ref=str(i), summary="a short summary line"))
    """
)


def appends_single(state: Path) -> float:
    ledger = Ledger(state)
    start = time.perf_counter()
    for i in range(APPENDS):
        ledger.append(TimelineEvent(event="tick", ref=str(i), summary="a short summary line"))
    return APPENDS / (time.perf_counter() - start)


def appends_concurrent(state: Path, writers: int = 4) -> float:
    start = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(state), str(APPENDS)]) for _ in range(writers)]
    for p in procs:
        p.wait()
    elapsed = time.perf_counter() - start
    return writers * APPENDS / elapsed


def write_bug_events(state: Path, n: int) -> Path:
    """n events: open -> fixing -> fixed -> update(category) for n/4 bugs, written in batches."""
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    path = state / "bugs.ndjson"
    with path.open("wb") as fh:
        batch = []
        for i in range(n // 4):
            bug_id = f"bug-20260101-0000-{i:06x}"
            ts = t0 + timedelta(seconds=i)
            batch += [
                BugEvent(
                    bug_id=bug_id,
                    event="open",
                    status="open",
                    ts=ts,
                    source="unit_test",
                    unit_id=f"u{i % 50}",
                    test_name=f"test_{i}",
                    title=f"test_{i}: expected 400 got 500",
                    severity="high",
                ),
                BugEvent(bug_id=bug_id, event="transition", status="fixing", from_status="open", ts=ts),
                BugEvent(
                    bug_id=bug_id, event="transition", status="fixed", from_status="fixing", fix_refs=["run-x"], ts=ts
                ),
                BugEvent(bug_id=bug_id, event="update", status="fixed", category="impl_bug", ts=ts),
            ]
            if len(batch) >= 10_000:
                fh.write(b"".join(encode(r) for r in batch))
                batch = []
        fh.write(b"".join(encode(r) for r in batch))
    return path


def fold_ours(state: Path) -> tuple[float, dict]:
    start = time.perf_counter()
    bugs = fold(Ledger(state).read("bug"))
    return time.perf_counter() - start, bugs


def fold_pandas(path: Path) -> tuple[float, object]:
    import pandas as pd

    start = time.perf_counter()
    df = pd.read_json(path, lines=True, dtype=False)
    current = df.groupby("bug_id", sort=False).last()
    return time.perf_counter() - start, current


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-ledger-") as tmp:
        tmp_path = Path(tmp)
        single = appends_single(tmp_path / "single")
        concurrent = appends_concurrent(tmp_path / "concurrent")
        print(f"appends, 1 writer  (1 record + fsync each): {single:8.0f} appends/s  ({APPENDS} appends)")
        print(f"appends, 4 writers (processes, shared file): {concurrent:8.0f} appends/s  ({4 * APPENDS} appends)")
        print(f"ratio 4 writers / 1 writer: {concurrent / single:.2f}")

        state = tmp_path / "fold"
        state.mkdir()
        path = write_bug_events(state, BUG_EVENTS)
        size_mb = path.stat().st_size / 1e6
        t_ours, ours = fold_ours(state)
        t_pd, theirs = fold_pandas(path)
        assert len(ours) == len(theirs), (len(ours), len(theirs))
        sample = next(iter(ours))
        assert (
            ours[sample].status == theirs.loc[sample, "status"]
            and ours[sample].category == theirs.loc[sample, "category"]
        )
        print(f"\nfold of {BUG_EVENTS:,} bug events ({size_mb:.0f} MB, {len(ours):,} bugs), same answer from both:")
        print(f"  graphlemon (validated read + fold): {t_ours:6.2f} s")
        print(f"  pandas read_json + groupby.last   : {t_pd:6.2f} s")
        print(f"  ratio graphlemon / pandas          : {t_ours / t_pd:.2f}")


if __name__ == "__main__":
    main()
