"""Tester stage (loop L1): one tester turn, a structured test run, hints, bugs, self-check (docs/tester.md).

    test_unit(session, nid, unit_id, attempt, first, loop_round, code_ref) -> TesterOutput   (the loop's entry)
    run_tester(project, unit_id, executor=..., mode="test" | "retry" | "resume", workdir=..., ...)
        -> TesterOutput

1. the tester role (through the Executor) reads code, spec.json and contract.json and
   writes tests at the unit's declared test paths (its sandbox);
2. the stage runs them with the structured runner (60 s cap: on expiry the run is
   killed and marked crashed), computes coverage, keeps a hint on every failure;
3. the self-check runs; a failing turn is retried once with the violations as
   feedback, then the output is returned with `accepted=False`;
4. accepted: result.json (+ stdout.txt / stderr.txt) under
   `.graphlemon/units/<unit_id>/runs/<run_id>/`, a `RunRecord`, timeline events, and
   the bug bridge (failures -> bug_open, green -> fixed).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import time
from pathlib import Path

from ..agents.executor_seam import MISBEHAVIOUR
from ..bugs import BugTracker
from ..errors import ErrorCode, GraphLemonError, invalid_param
from ..execlogs import log_test_run
from ..models import RunFailure, RunRecord, TimelineEvent, utcnow
from ..project import ProjectHandle
from ..redact import write_redacted
from ..units import UnitFiles
from . import tester_coverage as coverage
from .session import LoopSession
from .tester_bridge import bridge_failures, bridge_pass
from .tester_models import TesterAgentOutput, TesterFailure, TesterMode, TesterOutput, TesterResult
from .tester_selfcheck import read_test_files, self_check, unit_modules

TEST_TIMEOUT_S = 60.0
ENDED_WITHOUT_ANSWER = ("max_turns", "timeout", *MISBEHAVIOUR)  # the turn's tests are run and judged all the same
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")  # object addresses differ per run: masked so results are repeatable
STAGE_ITEMS = ("2:", "4:", "8:")  # self-check items about the stage's own records, checked after recording
RUN_ID_PREFIX = "run"


def new_run_id() -> str:
    return f"{RUN_ID_PREFIX}-{utcnow():%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"


def test_unit(
    session: LoopSession, nid: str, unit_id: str, attempt: int, first: int, loop_round: int, code_ref: str | None
) -> TesterOutput:
    """The tester stage in the unit's worktree (a crash gets one tester re-run first); memoised per attempt."""
    return session.memo(
        nid, f"a{attempt}-tester", TesterOutput, lambda: _test(session, nid, unit_id, attempt, first, loop_round, code_ref),
        then=lambda out: session.artifacts.write("test_report", _report(out), task_id=session.task_id, unit_id=unit_id,
                                                 title=f"{unit_id} attempt {attempt}"),
    )  # fmt: skip


def _test(
    session: LoopSession, nid: str, unit_id: str, attempt: int, first: int, loop_round: int, code_ref: str | None
) -> TesterOutput:
    worktree = session.worktrees.unit(unit_id)
    mode = "test" if attempt == 1 else "retry"  # the unit's first attempt writes the tests; later ones re-run them
    out = run_tester(
        session.project, unit_id, executor=session.executor, mode=mode, workdir=worktree.path,
        task_id=session.task_id, node_exec_id=f"{nid}-tester-a{attempt}", attempt=attempt,
        max_attempts=first + session.config.max_unit_attempts - 1, loop_round=loop_round,
        timeout_s=session.config.test_timeout_s, code_ref=code_ref, run_id=f"run-{nid}-a{attempt}",
    )  # fmt: skip
    if out.next_action == "retry_tester":  # the suite crashed: the tester gets one more run before the coder
        out = run_tester(
            session.project, unit_id, executor=None, mode="retry", workdir=worktree.path, task_id=session.task_id,
            node_exec_id=f"{nid}-tester-a{attempt}-rerun", attempt=attempt, loop_round=loop_round,
            max_attempts=first + session.config.max_unit_attempts - 1, timeout_s=session.config.test_timeout_s,
            code_ref=code_ref, run_id=f"run-{nid}-a{attempt}-rerun",
        )  # fmt: skip
    session.commit_work(worktree, f"tester: {unit_id} tests (attempt {attempt})", node_exec_id=nid, stage="tester",
                        unit_id=unit_id)  # fmt: skip
    if out.ok:
        session.worktrees.require_committed(worktree, session.unit_files.unit(unit_id).tests)
    return out


STACK_CHARS = 1_500


def crash_reason(session: LoopSession, out: TesterOutput) -> str | None:
    """Why the unit's suite could not run, from the run's result.json (None when it ran, or the file is gone)."""
    if not out.crashed:
        return None
    try:
        result = TesterResult.model_validate_json((session.project.root / out.result_ref).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return result.crash_reason


def hints_for_coder(out: TesterOutput, crash_reason: str | None = None) -> str:
    """The previous attempt for the coder: each failing test with its message, trimmed stack and hint; or why the
    suite could not run."""
    parts = []
    if out.crashed:
        reason = crash_reason or next((f.message for f in out.failures if f.message), "") or "see the stack below"
        parts.append(f"The test suite could not run: {reason.strip()[:800]}")
    for f in out.failures:
        where = f" ({f.file}:{f.line})" if f.file and f.line else ""
        lines = [f"- test {f.test}{where}" + (f", bug {f.bug_id}" if f.bug_id else "")]
        if f.expected is not None or f.got is not None:
            lines.append(f"  expected {f.expected!r}, got {f.got!r}")
        if f.message:
            lines.append(f"  message: {f.message.strip()[:600]}")
        if f.stack:
            stack = f.stack.strip()
            lines.append(
                "  stack (trimmed):\n" + _indent(stack if len(stack) <= STACK_CHARS else "…" + stack[-STACK_CHARS:])
            )
        lines.append(f"  hint: {f.hint}")
        parts.append("\n".join(lines))
    return "\n".join(parts) or "the tests failed without details"


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


def _report(out: TesterOutput) -> str:
    s = out.summary
    rows = "\n".join(f"| {f.test} | {f.expected} | {f.got} | {f.hint} | {f.bug_id or ''} |" for f in out.failures)
    table = f"\n| test | expected | got | hint | bug |\n|---|---|---|---|---|\n{rows}\n" if rows else "\n"
    return (
        f"# Test report: {out.unit_id} ({out.run_id})\n\n"
        f"{'green' if out.ok else 'crashed' if out.crashed else 'red'}: {s.passed}/{s.total} passed, {s.failed} failed, "
        f"{s.skipped} skipped; acceptance coverage {out.acceptance_coverage:.0%}, contract coverage "
        f"{out.contract_coverage:.0%} (executor: {out.executor})\n{table}"
    )


def run_tester(
    project: ProjectHandle,
    unit_id: str,
    *,
    executor,
    mode: TesterMode = "test",
    workdir: Path | None = None,
    task_id: str | None = None,
    node_exec_id: str | None = None,
    attempt: int = 1,
    max_attempts: int = 3,
    loop_round: int = 0,
    resume_token: str | None = None,
    timeout_s: float = TEST_TIMEOUT_S,
    code_ref: str | None = None,
    run_id: str | None = None,
) -> TesterOutput:
    """`run_id` (the loop passes one per node and attempt) makes a finished run final: calling again returns it."""
    files = UnitFiles(project.state_dir)
    unit, spec, contract = files.unit(unit_id), files.spec(unit_id), files.contract(unit_id)
    workdir = Path(workdir or project.root)
    if mode == "resume" and not resume_token:
        raise invalid_param("mode resume needs a resume token (the run_id of the interrupted run)")
    token = resume_token if mode == "resume" else run_id
    if token:
        done = _resumed(files, unit_id, token, project)
        if done is not None:
            done.mode = mode
            return done
    node_id = node_exec_id or f"ne-{task_id or 'adhoc'}-tester-{unit_id}-{secrets.token_hex(3)}"
    ctx = _Attempt(project, files, unit, spec, contract, workdir=workdir, mode=mode, task_id=task_id,
                   node_id=node_id, attempt=attempt, max_attempts=max_attempts, timeout_s=timeout_s)  # fmt: skip
    feedback: list[str] = []
    for turn in (1, 2):
        this_run = token if token and turn == 1 else f"{token}-t2" if token else new_run_id()
        output = ctx.run(executor, this_run, feedback)
        agent_violations = [v for v in ctx.check(output) if not v.startswith(STAGE_ITEMS)]
        if agent_violations and turn == 1 and ctx.agent is not None:
            feedback = agent_violations
            continue
        _record(project, ctx.result, output, task_id=task_id, node_id=node_id, loop_round=loop_round,
                code_ref=code_ref, started=ctx.started)  # fmt: skip
        output.self_check_violations = ctx.check(output)
        output.accepted = not output.self_check_violations
        return output
    raise AssertionError("unreachable")  # pragma: no cover


class _Attempt:
    """One tester turn + test run of a unit, and the self-check over it."""

    def __init__(self, project, files, unit, spec, contract, **opts) -> None:
        self.project, self.files, self.unit, self.spec, self.contract = project, files, unit, spec, contract
        self.opts = opts
        self.workdir: Path = opts["workdir"]

    def run(self, executor, run_id: str, feedback: list[str]) -> TesterOutput:
        o, unit, spec = self.opts, self.unit, self.spec
        self.started = time.monotonic()
        self.agent, answer = _tester_turn(
            self.project, executor, unit, spec, self.contract, workdir=self.workdir, mode=o["mode"],
            task_id=o["task_id"], node_id=o["node_id"], run_id=run_id, attempt=o["attempt"], feedback=feedback,
        )  # fmt: skip
        run = self._guarded_run(unit)
        self.names = [c.name for c in run.cases] or _static_names(read_test_files(self.workdir, unit.tests))
        acc, uncovered = coverage.acceptance(spec, self.names)
        con, missing_codes = coverage.contract(self.contract, self.names)
        crashed, crash_reason = _crash(run, o["timeout_s"])
        ok = run.ok and not crashed
        self.result = TesterResult(
            run_id=run_id, unit_id=unit.unit_id, mode=o["mode"], attempt=o["attempt"], ok=ok, summary=run.summary,
            failures=_failures(run, answer), next_action=_next_action(self.project, unit.unit_id, crashed=crashed, ok=ok),
            retry_budget_left=max(0, o["max_attempts"] - o["attempt"]), acceptance_coverage=acc,
            contract_coverage=con, uncovered_criteria=uncovered, uncovered_statuses=missing_codes, crashed=crashed,
            crash_reason=crash_reason, timed_out=run.timed_out, framework=run.framework, command=run.command,
            confinement=run.confinement,
            exit_code=run.exit_code, stdout_tail=run.output_tail, duration_ms=run.duration_ms,
            tokens_used=self.agent.usage.total_tokens if self.agent else 0,
        )  # fmt: skip
        return _output(self.result, self.files.unit_dir(unit.unit_id), self.project, self.agent)

    def check(self, output: TesterOutput) -> list[str]:
        agent = self.agent
        return self_check(
            result=self.result, output=output, spec=self.spec, required_statuses=coverage.required_statuses(self.contract),
            test_files=read_test_files(self.workdir, self.unit.tests), code_paths=self.unit.code,
            modules=unit_modules(self.workdir, self.unit.code),
            ledger=self.project.ledger, task_id=self.opts["task_id"],
            sandbox_violations=[e.message for e in agent.violations] if agent else [],
            todo_statuses=_todo_statuses(self.project, self.opts["node_id"]) if agent else None, test_names=self.names,
        ) + ([ended_note(agent)] if agent is not None and agent.stop_reason in ENDED_WITHOUT_ANSWER else [])  # fmt: skip

    def _guarded_run(self, unit):
        """The unit's tests, confined; afterwards any change the tests made outside the tester's writable paths
        (a conftest rewriting the code, a symlink, a mode change) is reverted and recorded as a violation."""
        from ..agents.effects import guard_run, record_run_refusals

        o = self.opts
        guard = guard_run(self.workdir, _writable(unit.tests))
        run = _run_tests(self.workdir, unit.tests, o["timeout_s"], self.project.state_dir)
        log_test_run(self.project.state_dir, o["node_id"], "unit tests", run)
        record_run_refusals(
            guard, self.project.ledger, what="test run", result=run, node_exec_id=o["node_id"], task_id=o["task_id"],
            stage="tester", unit_id=unit.unit_id, attempt=o["attempt"],
        )  # fmt: skip
        return run


# -- the turn -------------------------------------------------------------------------------------


def _tester_turn(
    project, executor, unit, spec, contract, *, workdir, mode, task_id, node_id, run_id, attempt, feedback
):
    """One tester turn; `executor=None` runs the existing tests without an agent (retry / resume).
    The turn is memoised in its run folder: a run interrupted after the turn does not pay for it twice."""
    if executor is None:
        return None, TesterAgentOutput()
    from ..agents import AgentResult, build_request, run_turn

    memo = UnitFiles(project.state_dir).unit_dir(unit.unit_id) / "runs" / run_id / "agent-turn.json"
    if memo.exists():
        saved = json.loads(_read_json_text(memo))
        return AgentResult.model_validate(saved["result"]), TesterAgentOutput.model_validate(saved["answer"])

    context = {
        "Unit": f"{unit.unit_id}: {unit.title}\ncode: {', '.join(unit.code)}\ntests (you may write only here): {', '.join(unit.tests)}",
        "Mode": mode,
        "Acceptance criteria (spec.json)": "\n".join(f"- {c.id}: {c.text}" for c in spec.acceptance_criteria),
        "Contract (contract.json)": contract.model_dump_json(indent=1, exclude_none=True) if contract else "(none)",
        "Naming rule": _naming_rule(contract),
    }
    if feedback:
        context["Your last turn was rejected by the self-check"] = "\n".join(f"- {v}" for v in feedback)
    request = build_request(
        project, "tester", context=context, unit_id=unit.unit_id, run_id=run_id, task_id=task_id,
        node_exec_id=node_id, attempt=attempt, workdir=workdir, writable=_writable(unit.tests),
        output_model=TesterAgentOutput, skill_vars={"mode": mode}, documents=_shared_documents(project, task_id),
    )  # fmt: skip
    result = run_turn(project, request, executor)
    if result.stop_reason in ENDED_WITHOUT_ANSWER:  # the tests it wrote (if any) run; the self-check names the end
        answer = TesterAgentOutput()
    elif not result.ok or result.output is None:
        raise GraphLemonError(
            ErrorCode.OUTPUT_INVALID,
            f"tester turn for {unit.unit_id} stopped with {result.stop_reason}: {result.output_error or 'no output'}",
            transcript=result.transcript_path,
        )
    else:
        answer = TesterAgentOutput.model_validate(result.output)
    memo.parent.mkdir(parents=True, exist_ok=True)
    _write(memo, json.dumps({"result": result.model_dump(mode="json"), "answer": answer.model_dump(mode="json")}))
    return result, answer


def _naming_rule(contract) -> str:
    """How test names are read for coverage (tester_coverage.py); the HTTP part only when the contract has statuses."""
    rule = "put the criterion id (ac1, ac2, ...) in each test's name; "
    statuses = coverage.required_statuses(contract)
    if statuses:
        rule += f"put http<code> in a test's name for each contract status ({', '.join(f'http{c}' for c in statuses)}); "
    return rule + "give every criterion at least one negative case (a name with neg / invalid / reject / not / ...)"


def _shared_documents(project: ProjectHandle, task_id: str | None) -> dict[str, str]:
    """The task's SDD (the tester's skill judges tests against it), shared and cached for every unit's turn."""
    from ..artifacts import ArtifactStore

    store = ArtifactStore(project.ledger)
    record = store.latest("sdd", task_id=task_id) if task_id else None
    return {"SDD": store.read_text(record)} if record else {}


def ended_note(result) -> str:
    """The self-check line for a tester turn that ended without an answer (its tests, if any, still ran)."""
    why = f": {result.output_error}" if result.output_error else ""
    return f"turn: the tester's turn ended without an answer ({result.stop_reason}{why})"


def _writable(test_paths: list[str]) -> list[str]:
    out = []
    for p in test_paths:
        out.append(p if any(ch in p for ch in "*?[") or Path(p).suffix else p.rstrip("/") + "/**")
    return out


def _run_tests(workdir: Path, targets: list[str], timeout_s: float, state_dir: Path):
    from ..testrun import run_tests
    from ..testrun.confine import for_workdir

    chosen = [t for t in targets if (workdir / t).exists()] or targets
    return run_tests(workdir, chosen, timeout=timeout_s, confinement=for_workdir(workdir, state_dir))


def _static_names(test_files: dict[str, str]) -> list[str]:
    names = []
    for source in test_files.values():
        names += re.findall(r"def\s+(test\w*)\s*\(", source)
        names += re.findall(r"\b(?:it|test)\s*\(\s*['\"`]([^'\"`]+)", source)
    return names


def _failures(run, answer: TesterAgentOutput) -> list[TesterFailure]:
    out = []
    for f in run.failures:
        short = f.name.rsplit("::", 1)[-1]
        hint = (answer.hints.get(f.name) or answer.hints.get(short) or f.hint or "").strip()
        if not hint:
            hint = f"{f.name} fails with: {(f.message or 'no message').splitlines()[0][:200]} — read that line of the code under test first."
        out.append(TesterFailure.from_test(f, stack=_ADDRESS.sub(" at 0x…", f.detail or f.message)[:8000], hint=hint))
    return out


def _crash(run, timeout_s: float) -> tuple[bool, str | None]:
    if run.timed_out:
        return True, f"the test run did not finish within {timeout_s:g} s and was killed"
    if run.crashed:
        first = run.failures[0].message if run.failures else run.output_tail[-500:]
        return True, f"the test suite could not run: {first}"
    if not run.ok and run.summary.passed == 0 and run.failures and all(_is_load_error(f) for f in run.failures):
        return (
            True,
            f"the test suite could not load: {run.failures[0].message.splitlines()[0] if run.failures[0].message else run.failures[0].name}",
        )
    return False, None


def _is_load_error(failure) -> bool:
    text = f"{failure.name} {failure.message}".lower()
    return any(
        w in text
        for w in (
            "collection error",
            "error collecting",
            "syntaxerror",
            "importerror",
            "modulenotfounderror",
            "failed to load",
            "cannot find module",
        )
    )


def _next_action(project: ProjectHandle, unit_id: str, *, crashed: bool, ok: bool) -> str:
    if ok:
        return "pass"
    if not crashed:
        return "retry_coder"
    previous = [r for r in project.ledger.read_as("run", RunRecord) if r.scope == "unit" and r.unit_id == unit_id]
    return "retry_coder" if previous and previous[-1].crashed else "retry_tester"


def _output(result: TesterResult, unit_dir: Path, project: ProjectHandle, agent) -> TesterOutput:
    result_path = unit_dir / "runs" / result.run_id / "result.json"
    return TesterOutput(
        ok=result.ok, mode=result.mode, unit_id=result.unit_id, run_id=result.run_id,
        result_ref=str(result_path.relative_to(project.root)) if result_path.is_relative_to(project.root) else str(result_path),
        summary=result.summary, failures=result.failures, acceptance_coverage=result.acceptance_coverage,
        contract_coverage=result.contract_coverage, crashed=result.crashed, next_action=result.next_action,
        retry_budget_left=result.retry_budget_left, duration_ms=result.duration_ms, tokens_used=result.tokens_used,
        executor=agent.executor if agent else "none",
    )  # fmt: skip


def _todo_statuses(project: ProjectHandle, node_id: str) -> list[str] | None:
    path = project.state_dir / "agent-state" / node_id / "tester-todo.json"
    if not path.exists():
        return []
    return [item.get("status", "pending") for item in json.loads(_read_json_text(path))]


def _read_json_text(path: Path) -> str:
    """A JSON file the Tester reads back: not UTF-8 is INVALID_PARAM naming the file, never a traceback."""
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise invalid_param(
            f"{path}: not UTF-8 (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})", path=str(path)
        ) from None


# -- recording ------------------------------------------------------------------------------------


def _record(project, result: TesterResult, output: TesterOutput, *, task_id, node_id, loop_round, code_ref, started):
    tracker = BugTracker(project.ledger)
    if result.ok:
        output.bugs_transitioned = bridge_pass(tracker, unit_id=result.unit_id, run_id=result.run_id)
    else:
        failures = result.failures or [_crash_failure(result)]
        source = "unit_test_infra" if result.crashed else "unit_test"
        output.bugs_opened = bridge_failures(
            tracker, failures, unit_id=result.unit_id, run_id=result.run_id, task_id=task_id, source=source
        )
        if not result.crashed:  # the tests ran: a bug whose test passed this time is fixed
            failing = frozenset(f.test for f in failures)
            output.bugs_transitioned = bridge_pass(
                tracker, unit_id=result.unit_id, run_id=result.run_id, except_tests=failing
            )
        if result.failures:
            output.failures = result.failures
    run_dir = UnitFiles(project.state_dir).unit_dir(result.unit_id) / "runs" / result.run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    _write(run_dir / "stdout.txt", result.stdout_tail)
    if result.crashed:
        _write(run_dir / "stderr.txt", (result.crash_reason or "") + "\n\n" + result.stdout_tail)
    ledger = project.ledger
    ledger.append_unique(
        RunRecord(
            run_id=result.run_id,
            scope="unit",
            task_id=task_id,
            unit_id=result.unit_id,
            node_exec_id=node_id,
            attempt=result.attempt,
            loop_round=loop_round,
            code_ref=code_ref,
            ok=result.ok,
            crashed=result.crashed,
            timed_out=result.timed_out,
            framework=result.framework,
            summary=result.summary,
            failures=[RunFailure(**f.model_dump()) for f in result.failures],
            acceptance_coverage=result.acceptance_coverage,
            contract_coverage=result.contract_coverage,
            next_action=result.next_action,
            duration_ms=int((time.monotonic() - started) * 1000),
            result_ref=output.result_ref,
            confinement=result.confinement,
        ),  # fmt: skip
        key=lambda r: r.run_id,
    )
    for event, summary in (
        (
            "unit_tested",
            f"{result.summary.passed}/{result.summary.total} passed ({result.mode}, attempt {result.attempt})",
        ),
        ("test_passed" if result.ok else "test_failed", _headline(result)),
    ):
        ledger.append_unique(
            TimelineEvent(event=event, task_id=task_id, unit_id=result.unit_id, ref=result.run_id, summary=summary),
            key=lambda e: (e.event, e.ref),
        )
    _write(run_dir / "result.json", result.model_dump_json(indent=2))  # last: its presence means the run is recorded


def _crash_failure(result: TesterResult) -> TesterFailure:
    return TesterFailure(
        test="<test suite>",
        message=result.crash_reason or "the test suite crashed",
        stack=result.stdout_tail[-4000:],
        hint="The test suite did not run at all: fix the import / syntax error it reports before any test can pass.",
    )


def _headline(result: TesterResult) -> str:
    if result.ok:
        return f"all {result.summary.total} tests passed"
    if result.crashed:
        return f"crashed: {result.crash_reason}"
    first = result.failures[0] if result.failures else None
    return f"{result.summary.failed} failed" + (f"; first: {first.test}: {first.hint}" if first else "")


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    write_redacted(tmp, text)
    os.replace(tmp, path)


def _resumed(files: UnitFiles, unit_id: str, run_id: str, project: ProjectHandle) -> TesterOutput | None:
    """A finished run (its result.json is written last) is returned as it is; otherwise None: run it."""
    path = files.unit_dir(unit_id) / "runs" / run_id / "result.json"
    if not path.exists():
        return None
    result = TesterResult.model_validate_json(_read_json_text(path))
    out = _output(result, files.unit_dir(unit_id), project, None)
    bugs = BugTracker(project.ledger).all().values()
    out.bugs_opened = sorted(b.bug_id for b in bugs if b.run_id == run_id and b.unit_id == unit_id)
    return out
