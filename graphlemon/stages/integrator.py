"""Integrator stage (loop L2): run the planner's integration cases on the merged code, triage failures.

The integrator role writes tests for the cases in `.graphlemon/integration/spec.json`
(one or more tests per case, the case id in the test name: case `eat-food` →
`test_eat_food_grows_the_snake`) under the spec's test paths in the integration
worktree. The stage runs them with the structured runner and writes the run
directory the BugTriager reads (docs/triage.md):

    .graphlemon/integration/runs/<run_id>/result.json       IntegrationResult
    .graphlemon/integration/runs/<run_id>/process.log       timestamped runner log
    .graphlemon/integration/runs/<run_id>/http-trace.ndjson (empty for library projects)

A failing run ends the integrator node with `action="triage"`; the BugTriager
(stages/bug_triager.py) judges it next.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from ..execlogs import log_test_run
from ..lifecycle import ACTIVE_BUG
from ..models import RunFailure, RunRecord, utcnow
from ..nodes import node_exec_id
from ..redact import write_redacted
from ..triage.rundir import IntegrationFailure, IntegrationResult, Observation
from ..units import IntegrationSpec
from .outcomes import IntegrationOutcome
from .session import LoopSession


class IntegratorOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tests: list[str] = Field(
        default_factory=list, description="The integration test files you wrote, relative to the work tree"
    )
    summary: str = Field(default="", description="A few sentences: which cases the tests exercise")


def case_token(case_id: str) -> re.Pattern[str]:
    norm = re.sub(r"[^a-z0-9]+", "_", case_id.lower()).strip("_")
    return re.compile(rf"(?<![a-z0-9]){re.escape(norm)}(?![a-z0-9])")


def run_integration(session: LoopSession, loop_round: int, attempt: int) -> IntegrationOutcome:
    nid = node_exec_id(session.task_id, "integrator", loop_round=loop_round, attempt=attempt)
    stored = session.enter_node(nid, IntegrationOutcome, stage="integrator", loop_round=loop_round, attempt=attempt)
    if stored is not None:
        return stored
    run_id = f"int-{session.task_id}-r{loop_round}-a{attempt}"
    spec = session.unit_files.integration_spec()
    worktree = session.worktrees.integration()
    log = ProcessLog()
    if not spec.cases:
        outcome = IntegrationOutcome(ok=True, run_id=run_id, action="pass")
    else:
        _integrator_turn(session, nid, spec, worktree.path, run_id, attempt, log)
        session.commit_work(worktree, f"integrator: integration tests (round {loop_round})", node_exec_id=nid,
                            stage="integrator")  # fmt: skip
        outcome = _run_cases(session, spec, worktree.path, run_id, loop_round, nid, log)
    ref = session.save_outcome(nid, outcome)
    session.nodes.transition(nid, "done", output_ref=ref)
    summary = "pass" if outcome.ok else f"{outcome.failures} case(s) failed"
    session.timeline("integrated", f"round {loop_round} attempt {attempt}: {summary}", ref=run_id)
    return outcome


class ProcessLog:
    """process.log: one timestamped line per event (the triager windows it around a failure's ts)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, text: str) -> None:
        stamp = datetime.now(UTC).isoformat(timespec="milliseconds")
        self.lines += [f"{stamp} {line}" for line in text.splitlines() or [""]]

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def _integrator_turn(session, nid, spec: IntegrationSpec, workdir: Path, run_id: str, attempt: int, log) -> None:
    written = all((workdir / p).exists() for p in spec.test_paths)
    if written and (attempt > 1 or session.load_outcome(nid, IntegratorOutput, name="integrator-answer")):
        log("integrator: reusing the integration tests written earlier")  # a later attempt, or a resumed run
        return
    contracts = []
    for unit in session.unit_files.units().units:
        contract = session.unit_files.contract(unit.unit_id)
        if contract is not None:
            contracts.append(f"{unit.unit_id}: {contract.exports.model_dump_json(exclude_none=True)}")
    context = {
        "Integration cases": "\n".join(
            f"- {c.case} (involves {', '.join(c.involves)}): {c.description}" for c in spec.cases
        ),
        "Write tests under": ", ".join(spec.test_paths),
        "Naming rule": "put the case id in each test's name (case eat-food -> test_eat_food_...)",
        "Unit contracts": "\n".join(contracts) or "(none)",
    }
    _, answer = session.turn(
        "integrator", context, output_model=IntegratorOutput, node_exec_id=nid, workdir=workdir,
        writable=[p.rstrip("/") + "/**" if not Path(p).suffix else p for p in spec.test_paths], run_id=run_id,
        attempt=attempt,
    )  # fmt: skip
    session.save_outcome(nid, answer, name="integrator-answer")  # a run killed from here on does not pay it again
    log("integrator: wrote the integration tests")


def _run_cases(session, spec, workdir: Path, run_id: str, loop_round: int, nid: str, log) -> IntegrationOutcome:
    from ..agents.effects import guard_run, record_run_refusals
    from ..testrun import run_tests
    from ..testrun.confine import for_workdir

    started = utcnow()
    t0 = time.monotonic()
    log(f"integrator: running the integration cases in {workdir.name} ({', '.join(spec.test_paths)})")
    guard = guard_run(workdir, [p.rstrip("/") + "/**" if not Path(p).suffix else p for p in spec.test_paths])
    run = run_tests(workdir, spec.test_paths, timeout=session.config.test_timeout_s * 2,
                    confinement=for_workdir(workdir, session.project.state_dir))  # fmt: skip
    log_test_run(session.project.state_dir, nid, "integration cases", run)
    record_run_refusals(guard, session.ledger, what="integration run", result=run, node_exec_id=nid, task_id=session.task_id,
                        stage="integrator")  # fmt: skip
    log(f"$ {run.command}\n{run.output_tail}\nexit code {run.exit_code}{' (timed out)' if run.timed_out else ''}")
    failures = [_case_failure(spec, f) for f in run.failures]
    result = IntegrationResult(
        run_id=run_id, ok=run.ok, task_id=session.task_id, loop_round=loop_round,
        code_ref=session.worktrees.integration().head(), crashed=run.crashed, summary=run.summary,
        failures=failures, started_at=started, duration_ms=int((time.monotonic() - t0) * 1000),
    )  # fmt: skip
    run_dir = session.project.state_dir / "integration" / "runs" / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    write_redacted(run_dir / "result.json", result.model_dump_json(indent=2, exclude_none=True))
    write_redacted(run_dir / "process.log", log.text())
    (run_dir / "http-trace.ndjson").touch()
    session.ledger.append_unique(
        RunRecord(
            run_id=run_id,
            scope="integration",
            task_id=session.task_id,
            node_exec_id=nid,
            loop_round=loop_round,
            code_ref=result.code_ref,
            ok=run.ok,
            crashed=run.crashed,
            timed_out=run.timed_out,
            framework=run.framework,
            summary=run.summary,
            duration_ms=result.duration_ms,
            confinement=run.confinement,
            failures=[
                RunFailure(
                    test=f.case,
                    message=f.message,
                    expected=f.expected.value,
                    got=f.got.value,
                    hint=f.description,
                    stack=f.stack,
                )
                for f in failures
            ],
            result_ref=str((run_dir / "result.json").relative_to(session.project.root)),
        ),  # fmt: skip
        key=lambda r: r.run_id,
    )
    if run.ok:  # the cases pass now: the integration bugs of this task are fixed by this run
        for bug in session.bugs.list(task_id=session.task_id, source="integration", status=sorted(ACTIVE_BUG)):
            session.bugs.transition(bug.bug_id, "fixed", by="integrator", fix_refs=[run_id])
        return IntegrationOutcome(ok=True, run_id=run_id, action="pass")
    return IntegrationOutcome(ok=False, run_id=run_id, action="triage", failures=len(failures))


def _case_failure(spec: IntegrationSpec, f) -> IntegrationFailure:
    case = next((c for c in spec.cases if case_token(c.case).search(f.name.lower())), None)
    return IntegrationFailure(
        case=case.case if case else f.name, step=0, description=case.description if case else f.name,
        involves=case.involves if case else [], expected=Observation(value=f.expected), got=Observation(value=f.got),
        message=f.message, stack=f.detail or f.message, ts=utcnow(),
    )  # fmt: skip
