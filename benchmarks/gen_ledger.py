"""Generate a synthetic GraphLemon project ledger of N run / bug / usage events.

    python benchmarks/gen_ledger.py OUT_DIR [--events 1000000] [--seed 7]

The ledger follows the DevLoop's shape: tasks with units, org rounds
(`loop_round`) and L1 attempts; each unit run fails a shrinking set of tests,
the failures open bugs (one per unit:test while active) that are fixed when the
test passes and sometimes reopened; a few runs repeat the same `code_ref` with
a different outcome (flaky tests); integration runs are triaged; every attempt
makes LLM calls with tokens and cost; some tasks wait for quota or block on
their budget. Lines are written as JSON directly (fast) in the exact format of
`model_dump_json(exclude_none=True)`; a sample of every file is validated
through `graphlemon.ledger.decode_line` at the end.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from graphlemon.ledger import decode_line
from graphlemon.models import LEDGER_FILES, SCHEMA_VERSION, Project

VERSION = 3  # bump when the generated ledger changes: benchmarks cache it by version

MODELS = {"claude-opus-4": (15.0, 75.0), "claude-sonnet-4": (3.0, 15.0), "claude-haiku-4": (0.8, 4.0)}
ROLES = ["coder", "tester", "planner", "validator", "bug-triager"]  # a stage is named after the role that runs it
CATEGORIES = ["contract_mismatch", "impl_bug", "spec_ambiguous", "infra_flake"]
ROOT_CAUSES = ["coder", "planning", "skill_defect", "inconclusive_escalate"]
ROUTES = ["fast_lane", "full_replan", "escalate"]
SEVERITIES = ["low", "medium", "high", "critical"]
SIGNATURES = [f"sig-{i:03d}" for i in range(60)]  # shared across tasks: recurring signatures


def iso(ts: datetime) -> str:
    return ts.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Writer:
    def __init__(self, state_dir: Path) -> None:
        state_dir.mkdir(parents=True, exist_ok=True)
        self.files = {kind: open(state_dir / name, "w", encoding="utf-8") for kind, name in LEDGER_FILES.items()}
        self.counts = dict.fromkeys(LEDGER_FILES, 0)

    def put(self, kind: str, ts: datetime, **fields: object) -> None:
        line = {"kind": kind, "schema_version": SCHEMA_VERSION, "ts": iso(ts)}
        line.update((k, v) for k, v in fields.items() if v is not None)
        self.files[kind].write(json.dumps(line, separators=(",", ":")) + "\n")
        self.counts[kind] += 1

    def close(self) -> None:
        for fh in self.files.values():
            fh.close()


class Generator:
    def __init__(self, w: Writer, rng: random.Random) -> None:
        self.w, self.rng = w, rng
        self.now = datetime(2026, 1, 1, tzinfo=UTC)
        self.seq = 0
        self.fixed: list[str] = []  # bugs fixed in the current task: candidates for a reopen

    def tick(self, seconds: float) -> datetime:
        self.now += timedelta(seconds=seconds * (0.5 + self.rng.random()))
        return self.now

    def next_id(self, prefix: str) -> str:
        self.seq += 1
        return f"{prefix}-{self.seq:08d}"

    def usage(self, task_id: str, unit_id: str | None, calls: int) -> None:
        for _ in range(calls):
            role = self.rng.choice(ROLES)
            model = self.rng.choice(list(MODELS))
            price_in, price_out = MODELS[model]
            inp, out = self.rng.randint(500, 20000), self.rng.randint(100, 4000)
            cread, cwrite = self.rng.randint(0, 30000), self.rng.randint(0, 5000)
            cost = (inp * price_in + out * price_out + cread * price_in * 0.1 + cwrite * price_in * 1.25) / 1e6
            self.w.put(
                "usage", self.tick(3), call_id=self.next_id("call"), task_id=task_id, stage=role, unit_id=unit_id,
                role=role, model=model, executor="anthropic", input_tokens=inp, output_tokens=out,
                cache_read_tokens=cread, cache_write_tokens=cwrite, cost_usd=round(cost, 6),
                latency_ms=self.rng.randint(300, 9000), stop_reason="end_turn",
            )  # fmt: skip

    def bug_open(self, task_id: str, unit_id: str | None, test: str, run_id: str, source: str) -> str:
        bug_id = self.next_id("bug")
        self.w.put(
            "bug", self.tick(1), bug_id=bug_id, event="open", status="open", by="tester", fix_refs=[], source=source,
            task_id=task_id, unit_id=unit_id, run_id=run_id, test_name=test, category="unknown",
            severity=self.rng.choice(SEVERITIES), title=f"{test} fails", detail="AssertionError",
            affected_units=[unit_id] if unit_id else [], signature=self.rng.choice(SIGNATURES),
        )  # fmt: skip
        return bug_id

    def bug_move(self, bug_id: str, frm: str, to: str, run_id: str | None = None) -> None:
        self.w.put("bug", self.tick(1), bug_id=bug_id, event="transition", status=to, from_status=frm, by="tester",
                   fix_refs=[run_id] if run_id else [])  # fmt: skip

    def run(self, task_id, unit_id, scope, loop_round, attempt, code_ref, failing, active) -> tuple[str, list]:
        run_id = self.next_id("run")
        failures = []
        for test in sorted(failing):
            if test not in active:
                active[test] = self.bug_open(task_id, unit_id, test, run_id, "unit_test" if unit_id else "integration")
            failures.append({"test": test, "file": "tests/test_x.py", "line": 10, "message": "assert 1 == 2",
                             "expected": 2, "got": 1, "stack": "", "hint": "check the return value", "bug_id": active[test]})  # fmt: skip
        total = 12
        self.w.put(
            "run", self.tick(20), run_id=run_id, scope=scope, task_id=task_id, unit_id=unit_id, attempt=attempt,
            loop_round=loop_round, code_ref=code_ref, ok=not failing, crashed=False, timed_out=False,
            framework="pytest", summary={"total": total, "passed": total - len(failing), "failed": len(failing), "skipped": 0},
            failures=failures, acceptance_coverage=1.0, contract_coverage=1.0,
            next_action="pass" if not failing else "retry_coder", duration_ms=self.rng.randint(200, 20000),
        )  # fmt: skip
        return run_id, failures

    def unit_loop(self, task_id: str, unit_id: str, loop_round: int, active: dict[str, str]) -> None:
        tests = [f"test_{unit_id}_{i}" for i in range(12)]
        new_failures = (
            self.rng.randint(0, 5) if loop_round == 0 else self.rng.choice([0, 0, 1])
        )  # later rounds: regressions
        failing = set(self.rng.sample(tests, new_failures)) | set(active)
        for attempt in range(1, self.rng.randint(3, 7)):
            code_ref = f"{task_id}-{unit_id}-{loop_round}-{attempt}"
            run_id, _ = self.run(task_id, unit_id, "unit", loop_round, attempt, code_ref, failing, active)
            if failing and self.rng.random() < 0.08:  # a flaky rerun on the same code
                flaky = set(self.rng.sample(sorted(failing), 1))
                self.run(task_id, unit_id, "unit", loop_round, attempt, code_ref, failing - flaky, active)
            self.usage(task_id, unit_id, self.rng.randint(1, 3))
            passed = {t for t in failing if self.rng.random() < 0.6}
            for test in sorted(passed):
                bug_id = active.pop(test)
                self.bug_move(bug_id, "open", "fixed", run_id)
                self.fixed.append(bug_id)
            failing -= passed
            if not failing:
                return

    def task(self, index: int) -> None:
        task_id = f"task-{index:05d}"
        self.w.put("task", self.tick(5), task_id=task_id, status="created", goal_text=f"goal {index}", by="human")
        self.w.put(
            "budget",
            self.tick(1),
            task_id=task_id,
            limit_type="cost_usd",
            limit_value=float(self.rng.choice([5, 20, 50])),
            by="human",
        )
        self.w.put("task", self.tick(5), task_id=task_id, status="planning", loop_round=0)
        self.usage(task_id, None, 2)
        units = [f"u{j}" for j in range(self.rng.randint(3, 10))]
        active: dict[str, dict[str, str]] = {u: {} for u in units}
        for loop_round in range(self.rng.randint(1, 3)):
            self.w.put("task", self.tick(5), task_id=task_id, status="coding", loop_round=loop_round)
            for unit_id in units:
                self.unit_loop(task_id, unit_id, loop_round, active[unit_id])
            if self.rng.random() < 0.1:  # a usage-limit wait, seen by the task and by the node that hit it
                node = self.next_id("node")
                self.w.put("task", self.tick(5), task_id=task_id, status="waiting_for_quota", loop_round=loop_round)
                started = self.now
                for status in ("running", "waiting_for_quota", "running", "done"):
                    self.w.put(
                        "node", self.tick(1800 if status == "running" else 5), node_exec_id=node, task_id=task_id,
                        stage="coder", attempt=1, loop_round=loop_round, status=status,
                        quota_wait_started_at=iso(started) if status == "waiting_for_quota" else None,
                        quota_limit_type="session" if status == "waiting_for_quota" else None,
                    )  # fmt: skip
                self.w.put("task", self.tick(5), task_id=task_id, status="coding", loop_round=loop_round)
            self.w.put("task", self.tick(5), task_id=task_id, status="integrating", loop_round=loop_round)
            self.integration(task_id, loop_round)
        final = self.rng.choices(["done", "blocked_pending_human", "coding"], [0.7, 0.1, 0.2])[0]
        reason = "budget_exceeded" if final == "blocked_pending_human" else None
        self.w.put("task", self.tick(5), task_id=task_id, status=final, blocked_reason=reason)
        if self.fixed and self.rng.random() < 0.3:  # a fixed bug comes back, and is fixed again
            bug_id = self.rng.choice(self.fixed)
            self.bug_move(bug_id, "fixed", "reopened")
            self.bug_move(bug_id, "reopened", "fixed")
        self.fixed.clear()

    def integration(self, task_id: str, loop_round: int) -> None:
        failing = set(self.rng.sample([f"it_{i}" for i in range(8)], self.rng.randint(0, 2)))
        active: dict[str, str] = {}
        run_id, _ = self.run(
            task_id, None, "integration", loop_round, 1, f"{task_id}-int-{loop_round}", failing, active
        )
        for test, bug_id in active.items():
            category = self.rng.choice(CATEGORIES)
            self.w.put(
                "triage", self.tick(10), run_id=run_id, task_id=task_id, root_cause=f"{test}: mismatch",
                category=category, affected_units=["u0"], confidence=round(self.rng.random(), 2), evidence=["x.py:1"],
                will_auto_apply=False, evidence_verified=True, failure_signature=self.rng.choice(SIGNATURES),
                fallback=False, executor="anthropic",
            )  # fmt: skip
            self.w.put(
                "bug", self.tick(1), bug_id=bug_id, event="update", status="open", by="validator", fix_refs=[],
                category=category, root_cause_category=self.rng.choice(ROOT_CAUSES), suggested_route=self.rng.choice(ROUTES),
            )  # fmt: skip
            if self.rng.random() < 0.6:
                self.bug_move(bug_id, "open", "fixed", run_id)
                if self.rng.random() < 0.3:
                    self.bug_move(bug_id, "fixed", "reopened")
        self.usage(task_id, None, 2)


def generate(root: Path, events: int = 1_000_000, seed: int = 7) -> dict[str, int]:
    """Write `<root>/.graphlemon/` with about `events` run + bug + usage lines; returns line counts by kind."""
    state = root / ".graphlemon"
    writer = Writer(state)
    gen = Generator(writer, random.Random(seed))
    index = 0
    try:
        while writer.counts["run"] + writer.counts["bug"] + writer.counts["usage"] < events:
            gen.task(index)
            index += 1
    finally:
        writer.close()
    meta = Project(project_id=f"p-bench{seed:04d}", target_path=str(root))
    (state / "project.json").write_text(meta.model_dump_json(indent=2) + "\n", encoding="utf-8")
    _validate_sample(state)
    return writer.counts


def _validate_sample(state: Path, every: int = 5000) -> None:
    """A sample of every file must read back as itself: valid, and in today's names (nothing an old ledger's
    mapping or migration would change)."""
    for name in LEDGER_FILES.values():
        path = state / name
        with open(path, "rb") as fh:
            for lineno, raw in enumerate(fh, 1):
                if lineno <= 200 or lineno % every == 0:
                    record = decode_line(raw.rstrip(b"\n"), path, lineno)
                    written, read = json.loads(raw), json.loads(record.model_dump_json(exclude_none=True))
                    changed = {k for k in written if k != "ts" and written[k] != read.get(k)}
                    if changed:
                        raise SystemExit(f"{path}:{lineno}: reads back changed ({sorted(changed)}): {raw[:300]!r}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="project folder to create (its .graphlemon/ is overwritten)")
    parser.add_argument("--events", type=int, default=1_000_000, help="run + bug + usage lines (default 1,000,000)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    counts = generate(args.out, args.events, args.seed)
    print(f"wrote {sum(counts.values()):,} lines in {time.perf_counter() - started:.1f} s: {counts}", file=sys.stderr)


if __name__ == "__main__":
    main()
