"""Analytics benchmark: the three reports over a 1,000,000-event ledger, DuckDB vs. pandas.

    python benchmarks/bench_analytics.py [--events 1000000]     (BENCH_SMOKE=1: 5,000)

The ledger (run / bug / usage events, plus the tasks, triage and budgets around them) is made
by benchmarks/gen_ledger.py and cached under benchmarks/out/. Each engine runs in its own
fresh process, so the peak resident memory (ru_maxrss, which counts DuckDB's native memory
too, unlike tracemalloc) is its own; times include reading the ndjson files. Side by side:

* duckdb: `analytics.LedgerDB` (typed views, validation checks, derived views) and all three
  reports with every section, three ways: `duckdb` parses the ndjson with no cache (the
  first-ever report); `duckdb+build` parses it and writes the Parquet cache
  (`.graphlemon/cache/analytics/`, see analytics/cache.py); `duckdb+cache` is the next report,
  reading the cache after checking the ledger files are unchanged;
* pandas: `read_json(lines=True)` and the same definitions for the main sections (convergence
  per unit, budget per task and by model, open bugs, flaky tests, recurring signatures).

The engines' answers are compared (row counts and totals) before the ratio is printed.
Printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

from smoke import sized

OUT = Path(__file__).resolve().parent / "out"


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# -- the two engines (each runs in a child process) ------------------------------------------


DUCKDB_MODES = ("duckdb", "duckdb+build", "duckdb+cache")


def run_duckdb(state: Path, mode: str) -> dict:
    from graphlemon.analytics import LedgerDB
    from graphlemon.analytics.reports.budget import budget_report
    from graphlemon.analytics.reports.bug_history import bug_history_report
    from graphlemon.analytics.reports.convergence import convergence_report

    if mode == "duckdb+build":
        shutil.rmtree(state / "cache" / "analytics", ignore_errors=True)
    base = peak_mb()
    start = time.perf_counter()
    with LedgerDB(state, cache=mode != "duckdb") as db:
        loaded = time.perf_counter()
        conv, budget, bugs = convergence_report(db), budget_report(db), bug_history_report(db)
    done = time.perf_counter()
    units, tasks = conv.section("units"), budget.section("tasks")
    return {
        "seconds": done - start,
        "load_seconds": loaded - start,
        "peak_mb": peak_mb() - base,
        "units": len(units),
        "rounds": int(units["rounds"].sum()),
        "non_converging": int(units["non_converging"].sum()),
        "cost": round(float(tasks["cost_usd"].sum()), 4),
        "models": len(budget.section("by_model")),
        "open_bugs": len(bugs.section("open_bugs")),
        "flaky": len(bugs.section("flaky_tests")),
        "signatures": len(bugs.section("signatures")),
    }


def run_pandas(state: Path) -> dict:
    import pandas as pd

    base = peak_mb()
    start = time.perf_counter()

    def read(name: str) -> pd.DataFrame:
        return pd.read_json(state / name, lines=True, convert_dates=["ts"], dtype=False)

    runs, bugs, usage, triage = read("runs.ndjson"), read("bugs.ndjson"), read("usage.ndjson"), read("triage.ndjson")
    tasks, budgets = read("tasks.ndjson"), read("budget.ndjson")
    loaded = time.perf_counter()

    # bug state: the fold = latest non-null value of each field (groupby.last skips NaN)
    bugs = bugs.sort_values("ts", kind="stable")
    fields = ["task_id", "unit_id", "run_id", "test_name", "category", "severity", "signature", "root_cause_category"]
    state_df = bugs.groupby("bug_id")[fields].last()
    state_df["status"] = bugs.groupby("bug_id")["status"].last()
    state_df["opened_at"] = bugs.groupby("bug_id")["ts"].min()
    run_task = runs.drop_duplicates("run_id").set_index("run_id")["task_id"]
    state_df["task_id"] = state_df["task_id"].fillna(state_df["run_id"].map(run_task))
    state_df["active"] = state_df["status"].isin(["open", "fixing", "reopened"])

    # convergence per unit: rounds = (loop_round, attempt), the latest run of each
    unit_runs = runs[(runs["scope"] == "unit") & runs["unit_id"].notna()].copy()
    unit_runs["failed"] = unit_runs["summary"].str["failed"]
    latest = unit_runs.sort_values("ts").groupby(["task_id", "unit_id", "loop_round", "attempt"], dropna=False).tail(1)
    latest = latest.sort_values(["loop_round", "attempt"])
    per_unit = latest.groupby(["task_id", "unit_id"], dropna=False).agg(
        rounds=("failed", "size"), failures_per_round=("failed", list), green=("ok", "last")
    )
    fail_rows = runs[["run_id", "loop_round", "attempt", "failures"]].explode("failures").dropna(subset=["failures"])
    fail_rows["bug_id"] = fail_rows["failures"].str["bug_id"]
    bug_rounds = fail_rows.drop_duplicates(["bug_id", "loop_round", "attempt"]).groupby("bug_id").size()
    stuck = state_df.assign(n=bug_rounds).dropna(subset=["unit_id", "n"]).groupby(["task_id", "unit_id"])["n"].max()
    per_unit["non_converging"] = stuck.reindex(per_unit.index).fillna(0) >= 3
    events = bugs.merge(state_df[["task_id", "unit_id"]], left_on="bug_id", right_index=True, suffixes=("_ev", ""))
    opened = events[events["event"] == "open"].groupby(["task_id", "unit_id"]).size()
    per_unit["bugs_opened"] = opened.reindex(per_unit.index).fillna(0)

    # budget per task and by model
    usage["total"] = usage[["input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"]].sum(axis=1)
    per_task = usage.groupby("task_id", dropna=False).agg(
        cost_usd=("cost_usd", "sum"), total_tokens=("total", "sum"), cache_read=("cache_read_tokens", "sum"),
        input_tokens=("input_tokens", "sum"), cache_write=("cache_write_tokens", "sum"),
    )  # fmt: skip
    per_task["cache_hit_share"] = per_task["cache_read"] / (
        per_task["input_tokens"] + per_task["cache_read"] + per_task["cache_write"]
    )
    limits = budgets.sort_values("ts").groupby("task_id")[["limit_type", "limit_value"]].last()
    per_task = per_task.join(limits)
    per_task["burn"] = per_task["cost_usd"] / per_task["limit_value"]
    by_model = usage.groupby("model").agg(calls=("call_id", "size"), cost_usd=("cost_usd", "sum"))
    last_status = tasks.sort_values("ts").groupby("task_id")["status"].last()
    per_task["status"] = last_status.reindex(per_task.index)

    # bug history: open bugs, flaky tests, recurring signatures
    open_bugs = state_df[state_df["active"]]
    done_runs = runs[runs["code_ref"].notna() & ~runs["crashed"] & ~runs["timed_out"]]
    per_code = done_runs.groupby(["scope", "unit_id", "code_ref"], dropna=False).size().rename("runs")
    fails = (
        done_runs[["run_id", "scope", "unit_id", "code_ref", "failures"]]
        .explode("failures")
        .dropna(subset=["failures"])
    )
    fails["test"] = fails["failures"].str["test"]
    per_test = (
        fails.groupby(["scope", "unit_id", "code_ref", "test"], dropna=False)["run_id"].nunique().rename("failed")
    )
    flaky = per_test.reset_index().merge(per_code.reset_index(), on=["scope", "unit_id", "code_ref"])
    flaky = flaky[flaky["runs"] > flaky["failed"]]
    sig = state_df.assign(sig=state_df["signature"].fillna(state_df["test_name"])).dropna(subset=["sig"])
    signatures = sig.groupby("sig")["task_id"].nunique()
    signatures = signatures[signatures >= 2]
    _ = triage
    done = time.perf_counter()
    return {
        "seconds": done - start,
        "load_seconds": loaded - start,
        "peak_mb": peak_mb() - base,
        "units": len(per_unit),
        "rounds": int(per_unit["rounds"].sum()),
        "non_converging": int(per_unit["non_converging"].sum()),
        "cost": round(float(per_task["cost_usd"].sum()), 4),
        "models": len(by_model),
        "open_bugs": len(open_bugs),
        "flaky": len(flaky),
        "signatures": len(signatures),
    }


# -- driver ----------------------------------------------------------------------------------


def ledger_for(events: int, seed: int = 7) -> Path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from gen_ledger import VERSION, generate

    root = OUT / f"ledger-v{VERSION}-{events}-{seed}"
    marker = root / ".complete"
    if not marker.exists():
        print(f"generating a {events:,}-event ledger in {root} (cached for the next run) ...", flush=True)
        counts = generate(root, events, seed)
        marker.write_text(json.dumps(counts))
    return root / ".graphlemon"


def measure(engine: str, state: Path) -> dict:
    proc = subprocess.run(
        [sys.executable, __file__, "--engine", engine, "--state", str(state)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{engine} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description="DuckDB vs pandas for the analytics reports")
    parser.add_argument("--events", type=int, default=sized(1_000_000, 5_000))
    parser.add_argument("--engine", choices=[*DUCKDB_MODES, "pandas"], help=argparse.SUPPRESS)
    parser.add_argument("--state", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.engine:
        result = run_pandas(args.state) if args.engine == "pandas" else run_duckdb(args.state, args.engine)
        print(json.dumps(result))
        return
    state = ledger_for(args.events)
    size_mb = sum(p.stat().st_size for p in state.glob("*.ndjson")) / 1e6
    results = {engine: measure(engine, state) for engine in (*DUCKDB_MODES, "pandas")}
    duck, cached, pand = results["duckdb"], results["duckdb+cache"], results["pandas"]
    checks = ["units", "rounds", "non_converging", "cost", "models", "open_bugs", "flaky", "signatures"]
    disagree = {(e, k): (r[k], pand[k]) for e, r in results.items() for k in checks if r[k] != pand[k]}
    print(f"ledger: {args.events:,} run/bug/usage events, {size_mb:,.0f} MB of ndjson")
    print(f"{'engine':<13} {'total s':>8} {'load s':>8} {'reports s':>10} {'peak MB':>8}")
    for name, r in results.items():
        print(
            f"{name:<13} {r['seconds']:>8.2f} {r['load_seconds']:>8.2f} {r['seconds'] - r['load_seconds']:>10.2f} {r['peak_mb']:>8.0f}"
        )
    print(
        f"answers agree: {'yes' if not disagree else f'NO {disagree}'} ({', '.join(f'{k}={duck[k]}' for k in checks)})"
    )
    print(
        f"cache: building it costs {results['duckdb+build']['seconds'] / duck['seconds']:.2f}x the uncached run once; "
        f"the next report takes {cached['seconds'] / duck['seconds']:.2f}x "
        f"({pand['seconds'] / cached['seconds']:.1f}x faster than pandas)"
    )
    print(
        f"ratio: duckdb is {pand['seconds'] / duck['seconds']:.1f}x faster end to end "
        f"({(pand['seconds'] - pand['load_seconds']) / (duck['seconds'] - duck['load_seconds']):.1f}x on the report queries alone), "
        f"uses {pand['peak_mb'] / duck['peak_mb']:.1f}x less peak memory; goal >= 5x and < 2 s for all three "
        f"({'met' if pand['seconds'] >= 5 * duck['seconds'] and duck['seconds'] < 2 else 'not met'} uncached; "
        f"{'met' if pand['seconds'] >= 5 * cached['seconds'] and cached['seconds'] < 2 else 'not met'} cached)"
    )


if __name__ == "__main__":
    main()
