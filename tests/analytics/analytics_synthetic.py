"""A synthetic, seeded DevLoop ledger built from the real record models (explicit timestamps).

It covers what the reports must get right: several org rounds and L1 attempts per unit,
bugs opened by failures and fixed / reopened / updated by triage, bugs whose task is only
known through their run, flaky reruns on the same code_ref, crashed runs, integration runs,
triage of several units, budget changes, quota waits (task and node level, one still open),
budget blocks, and records without a task.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from graphlemon.models import (
    BudgetConfig,
    BugEvent,
    NodeEvent,
    Record,
    RunFailure,
    RunRecord,
    TaskEvent,
    TestSummary,
    TriageRecord,
    UsageRecord,
)

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)
MODELS = ["claude-opus-4", "claude-sonnet-4"]
SIGNATURES = ["sig-null-title", "sig-timeout", "sig-404", "sig-type-error"]


@dataclass
class Synthetic:
    tasks: list[TaskEvent] = field(default_factory=list)
    nodes: list[NodeEvent] = field(default_factory=list)
    runs: list[RunRecord] = field(default_factory=list)
    bugs: list[BugEvent] = field(default_factory=list)
    usage: list[UsageRecord] = field(default_factory=list)
    triage: list[TriageRecord] = field(default_factory=list)
    budget: list[BudgetConfig] = field(default_factory=list)

    def all(self) -> list[Record]:
        return [*self.tasks, *self.nodes, *self.runs, *self.bugs, *self.usage, *self.triage, *self.budget]

    @property
    def end(self) -> datetime:
        return max(r.ts for r in self.all())


class _Builder:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.now = T0
        self.out = Synthetic()
        self.seq = 0
        self.active: dict[tuple[str | None, str | None, str], str] = {}  # (task, unit, test) -> active bug
        self.fixed: list[str] = []

    def tick(self, minutes: float = 1.0) -> datetime:
        self.now += timedelta(minutes=minutes * (0.5 + self.rng.random()))
        return self.now

    def new_id(self, prefix: str) -> str:
        self.seq += 1
        return f"{prefix}-{self.seq:04d}"

    # -- records -----------------------------------------------------------------------------
    def task_event(self, task_id: str, status: str, minutes: float = 1.0, **kw) -> None:
        self.out.tasks.append(TaskEvent(task_id=task_id, status=status, ts=self.tick(minutes), **kw))

    def usage(self, task_id: str | None, unit_id: str | None, calls: int) -> None:
        for _ in range(calls):
            stage, role = self.rng.choice(
                [("coder", "coder"), ("tester", "tester"), ("planner", "planner"), ("bug-triager", "bug-triager")]
            )
            self.out.usage.append(
                UsageRecord(
                    call_id=self.new_id("call"),
                    task_id=task_id,
                    unit_id=unit_id,
                    stage=stage,
                    role=role,
                    model=self.rng.choice(MODELS),
                    executor="scripted",
                    input_tokens=self.rng.randint(100, 5000),
                    output_tokens=self.rng.randint(10, 900),
                    cache_read_tokens=self.rng.choice([0, 0, self.rng.randint(1, 8000)]),
                    cache_write_tokens=self.rng.choice([0, self.rng.randint(1, 900)]),
                    cost_usd=round(self.rng.random() / 10, 5),
                    ts=self.tick(0.5),
                )  # fmt: skip
            )

    def bug_open(self, task_id: str | None, unit_id: str | None, test: str, run_id: str) -> str:
        bug_id = self.new_id("bug")
        self.out.bugs.append(
            BugEvent(
                bug_id=bug_id,
                event="open",
                status="open",
                by="tester",
                source="unit_test" if unit_id else "integration",
                task_id=task_id if self.rng.random() < 0.7 else None,  # else known only through run_id
                unit_id=unit_id,
                run_id=run_id,
                test_name=test,
                category="unknown",
                severity=self.rng.choice(["low", "medium", "high", "critical"]),
                title=f"{test} fails",
                signature=self.rng.choice(SIGNATURES) if self.rng.random() < 0.8 else None,
                affected_units=[unit_id] if unit_id else [],
                ts=self.tick(0.2),
            )  # fmt: skip
        )
        return bug_id

    def bug_move(self, bug_id: str, frm: str, to: str, **kw) -> None:
        self.out.bugs.append(
            BugEvent(bug_id=bug_id, event="transition", status=to, from_status=frm, ts=self.tick(0.2), **kw)
        )

    def run(self, task_id, unit_id, scope, loop_round, attempt, code_ref, failing, *, crashed=False) -> RunRecord:
        run_id = self.new_id("run")
        failures = []
        for test in sorted(failing):
            key = (task_id, unit_id, test)
            if key not in self.active:
                self.active[key] = self.bug_open(task_id, unit_id, test, run_id)
            failures.append(RunFailure(test=test, message="assert", expected=1, got=2, bug_id=self.active[key]))
        total = 6
        run = RunRecord(
            run_id=run_id, scope=scope, task_id=task_id, unit_id=unit_id, attempt=attempt, loop_round=loop_round,
            code_ref=code_ref, ok=not failing and not crashed, crashed=crashed, framework="pytest",
            summary=TestSummary(total=0 if crashed else total, passed=0 if crashed else total - len(failing), failed=len(failing)),
            failures=failures, ts=self.tick(2),
        )  # fmt: skip
        self.out.runs.append(run)
        return run

    # -- loops -------------------------------------------------------------------------------
    def unit_loop(self, task_id: str | None, unit_id: str, loop_round: int) -> None:
        tests = [f"test_{k}" for k in range(6)]
        carried = {t for (k, u, t) in self.active if (k, u) == (task_id, unit_id)}
        failing = set(self.rng.sample(tests, self.rng.randint(0, 3))) | carried
        for attempt in range(1, self.rng.randint(2, 6)):
            code_ref = f"{task_id}-{unit_id}-{loop_round}-{attempt}"
            run = self.run(task_id, unit_id, "unit", loop_round, attempt, code_ref, failing)
            if failing and self.rng.random() < 0.35:  # a flaky rerun: one failing test passes on the same code
                self.run(task_id, unit_id, "unit", loop_round, attempt, code_ref, failing - {min(failing)})
            if self.rng.random() < 0.15:  # a crashed run on the same code: neither pass nor fail evidence
                self.run(task_id, unit_id, "unit", loop_round, attempt, code_ref, set(), crashed=True)
            self.usage(task_id, unit_id, self.rng.randint(1, 3))
            for test in sorted(t for t in failing if self.rng.random() < 0.5):
                bug_id = self.active.pop((task_id, unit_id, test))
                if self.rng.random() < 0.3:
                    self.bug_move(bug_id, "open", "fixing")
                    self.bug_move(bug_id, "fixing", "fixed", fix_refs=[run.run_id])
                else:
                    self.bug_move(bug_id, "open", "fixed", fix_refs=[run.run_id])
                self.fixed.append(bug_id)
                failing.discard(test)
            if not failing:
                return

    def integration(self, task_id: str, units: list[str], loop_round: int) -> None:
        failing = set(self.rng.sample(["it_a", "it_b", "it_c"], self.rng.randint(0, 2)))
        run = self.run(task_id, None, "integration", loop_round, 1, f"{task_id}-int-{loop_round}", failing)
        for test in sorted(failing):
            bug_id = self.active[(task_id, None, test)]
            category = self.rng.choice(["contract_mismatch", "impl_bug", "spec_ambiguous", "infra_flake"])
            self.out.triage.append(
                TriageRecord(
                    run_id=run.run_id,
                    task_id=task_id if self.rng.random() < 0.6 else None,
                    root_cause=f"{test} mismatch",
                    category=category,
                    affected_units=self.rng.sample(units, min(2, len(units))),
                    confidence=0.8,
                    ts=self.tick(1),
                )  # fmt: skip
            )
            self.out.bugs.append(
                BugEvent(
                    bug_id=bug_id,
                    event="update",
                    status="open",
                    by="validator",
                    category=category,
                    severity=self.rng.choice(["high", "critical"]),
                    root_cause_category=self.rng.choice(["coder", "planning", "skill_defect"]),
                    suggested_route=self.rng.choice(["fast_lane", "full_replan"]),
                    ts=self.tick(0.3),
                )  # fmt: skip
            )
            if self.rng.random() < 0.5:
                self.bug_move(self.active.pop((task_id, None, test)), "open", "fixed", fix_refs=[run.run_id])

    def task(self, task_id: str) -> None:
        self.task_event(task_id, "created", goal_text=f"goal of {task_id}", by="human")
        kind = self.rng.choice(["cost_usd", "token_count"])
        self.out.budget.append(
            BudgetConfig(
                task_id=task_id, limit_type=kind, limit_value=2.0 if kind == "cost_usd" else 40000, ts=self.tick()
            )
        )
        self.task_event(task_id, "planning", loop_round=0)
        self.usage(task_id, None, 2)
        units = [f"u{j}" for j in range(self.rng.randint(2, 4))]
        for loop_round in range(self.rng.randint(1, 3)):
            self.task_event(task_id, "coding", loop_round=loop_round)
            for unit_id in units:
                self.unit_loop(task_id, unit_id, loop_round)
            self.task_event(task_id, "integrating", loop_round=loop_round)
            self.integration(task_id, units, loop_round)
        if self.fixed and self.rng.random() < 0.6:
            bug_id = self.rng.choice(self.fixed)
            self.fixed.remove(bug_id)
            self.bug_move(bug_id, "fixed", "reopened", note="came back")
        if self.rng.random() < 0.5:  # raise the budget later
            self.out.budget.append(
                BudgetConfig(task_id=task_id, limit_type="cost_usd", limit_value=5.0, ts=self.tick())
            )


def build(seed: int) -> Synthetic:
    b = _Builder(seed)
    b.task("t-1")
    b.task_event("t-1", "validating")
    b.task_event("t-1", "done", minutes=30)
    b.task("t-2")
    # a quota wait at task and node level, then a budget block, then resumed
    b.task_event("t-2", "waiting_for_quota", minutes=5)
    b.out.nodes.append(NodeEvent(node_exec_id="n-1", task_id="t-2", stage="coder", status="running", ts=b.tick()))
    started = b.tick(3)
    b.out.nodes.append(
        NodeEvent(node_exec_id="n-1", task_id="t-2", stage="coder", status="waiting_for_quota", quota_wait_started_at=started,
                  quota_limit_type="session", ts=b.tick(2))
    )  # fmt: skip
    b.out.nodes.append(NodeEvent(node_exec_id="n-1", task_id="t-2", stage="coder", status="running", ts=b.tick(45)))
    b.task_event("t-2", "coding", minutes=60)
    b.task_event("t-2", "blocked_pending_human", minutes=5, blocked_reason="budget_exceeded")
    b.task_event("t-2", "coding", minutes=120, by="human")
    b.task("t-3")
    # t-3 ends waiting for quota (an open interval: it lasts until as_of), node too
    b.task_event("t-3", "waiting_for_quota")
    b.out.nodes.append(
        NodeEvent(node_exec_id="n-2", task_id="t-3", stage="tester", status="waiting_for_quota", ts=b.tick())
    )
    # records with no task: a stray unit run and an LLM call
    b.unit_loop(None, "solo", 0)
    b.usage(None, None, 1)
    return b.out
