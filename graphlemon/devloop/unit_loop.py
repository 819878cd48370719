"""The L1 unit loop (REQ-03): coder turn → tester stage → (hints, bug ids) → coder retry, in the unit's worktree.

One node execution per unit and round (`ne-<task>-coder-<unit>-r<round>`) whose
status cycles running → reflecting → retrying → running until the tests are green
(done, merged into the integration branch) or the attempts run out (blocked,
bubbling up to the org loop). Each attempt's coder and tester outcomes are
persisted, so a resumed flow continues at the attempt it was in, without
repeating a finished turn.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ..errors import ErrorCode, GraphLemonError
from ..nodes import node_exec_id
from ..tester import TesterOutput, TesterResult, run_tester
from .outcomes import UnitOutcome
from .session import LoopSession


class CoderOutput(BaseModel):
    """The coder role's answer for one turn."""

    model_config = ConfigDict(extra="forbid")

    summary: str = Field(min_length=1)
    files: list[str] = Field(default_factory=list)


class CoderTurn(BaseModel):
    attempt: int
    commit: str | None
    files_changed: list[str]
    summary: str


def prior_attempts(session: LoopSession, unit_id: str, nid: str) -> int:
    """Coder attempts this unit used in its earlier node executions (the unit's counter runs across rounds)."""
    nodes = session.nodes.for_task(session.task_id)
    return max(
        (n.attempt for n in nodes if n.stage == "coder" and n.unit_id == unit_id and n.node_exec_id != nid), default=0
    )


def red_units(session: LoopSession) -> list[str]:
    """Units whose latest coder node in this task is not done (blocked, or never coded)."""
    latest: dict[str, tuple] = {}
    for n in session.nodes.for_task(session.task_id):
        if n.stage == "coder" and n.unit_id:
            key = (n.loop_round, n.started_at)
            if n.unit_id not in latest or key >= latest[n.unit_id][0]:
                latest[n.unit_id] = (key, n.status)
    return [u for u in session.unit_files.units().ids() if latest.get(u, (None, "missing"))[1] != "done"]


def unit_node_id(task_id: str, unit_id: str, loop_round: int, pass_tag: str = "") -> str:
    """The L1 node of a unit in a round (`pass_tag`: an L2 reset of the unit within the round)."""
    return node_exec_id(task_id, "coder", unit_id=unit_id, loop_round=loop_round) + (f"-{pass_tag}" if pass_tag else "")


def run_unit_loop(
    session: LoopSession, stages, unit_id: str, loop_round: int, feedback: str | None = None, pass_tag: str = ""
) -> UnitOutcome:
    """L1 for one unit through `stages.coder_turn` / `stages.test_unit` (domain calls or Prefect tasks);
    `pass_tag` distinguishes an L2 reset of the unit within the same round."""
    nid = unit_node_id(session.task_id, unit_id, loop_round, pass_tag)
    node = session.nodes.find(nid)
    if node is not None and node.status in ("done", "blocked"):
        stored = session.load_outcome(nid, UnitOutcome)
        if stored is not None:
            return stored
    first = prior_attempts(session, unit_id, nid) + 1
    worktree = session.worktrees.unit(unit_id, sync=node is None)
    if node is None:
        attempt = first
        session.nodes.transition(
            nid, "running", task_id=session.task_id, stage="coder", unit_id=unit_id, attempt=attempt,
            loop_round=loop_round, git_worktree_ref=worktree.branch,
        )  # fmt: skip
    else:
        attempt = node.attempt
        session.enter_node(nid, UnitOutcome, stage="coder", loop_round=loop_round)  # back to running, attempt kept
    hints = feedback
    while True:
        coder = stages.coder_turn(nid, unit_id, attempt, loop_round, hints)
        try:
            tested = stages.test_unit(nid, unit_id, attempt, first, loop_round, coder.commit)
        except GraphLemonError as exc:
            if exc.code != ErrorCode.WORKTREE_TAMPERED:
                raise
            return _tampered(session, nid, unit_id, attempt, first, exc)
        if tested.ok:
            merged = session.worktrees.merge_into_integration(
                unit_id, f"graphlemon: {unit_id} green in round {loop_round}"
            )
            outcome = UnitOutcome(
                unit_id=unit_id, green=True, attempts=attempt - first + 1, last_attempt=attempt, run_id=tested.run_id,
                commit=merged,
            )  # fmt: skip
            ref = session.save_outcome(nid, outcome)
            session.nodes.transition(nid, "done", attempt=attempt, output_ref=ref)
            session.timeline(
                "unit_green", f"{unit_id}: green after {outcome.attempts} attempt(s)", unit_id=unit_id, ref=nid
            )
            return outcome
        hints = _feedback(tested, _crash_reason(session, tested))
        session.nodes.transition(nid, "reflecting", attempt=attempt, error=hints[:2000])
        if attempt - first + 1 >= session.config.max_unit_attempts:
            outcome = UnitOutcome(
                unit_id=unit_id, green=False, attempts=attempt - first + 1, last_attempt=attempt, run_id=tested.run_id,
                open_bug_ids=sorted({f.bug_id for f in tested.failures if f.bug_id} | set(tested.bugs_opened)),
                hints=[f.hint for f in tested.failures], error="retry limit reached",
            )  # fmt: skip
            ref = session.save_outcome(nid, outcome)
            session.nodes.transition(
                nid, "blocked", attempt=attempt, error_code="RETRY_LIMIT", error=hints[:2000], output_ref=ref
            )
            session.timeline(
                "unit_blocked", f"{unit_id}: still red after {outcome.attempts} attempts", unit_id=unit_id, ref=nid
            )
            return outcome
        attempt += 1
        session.nodes.transition(nid, "retrying", attempt=attempt)
        session.nodes.transition(nid, "running", attempt=attempt)


def _tampered(
    session: LoopSession, nid: str, unit_id: str, attempt: int, first: int, exc: GraphLemonError
) -> UnitOutcome:
    """The unit's work tree is not what GraphLemon made, or its green run was not of the tests its branch holds:
    the unit is blocked with that evidence for a person, nothing of it merged."""
    outcome = UnitOutcome(
        unit_id=unit_id, green=False, attempts=attempt - first + 1, last_attempt=attempt, error=exc.message[:2000]
    )
    ref = session.save_outcome(nid, outcome)
    session.nodes.transition(
        nid, "blocked", attempt=attempt, error_code=str(exc.code), error=exc.message[:2000], output_ref=ref
    )
    session.timeline("unit_blocked", f"{unit_id}: {exc.message[:500]}", unit_id=unit_id, ref=nid)
    return outcome


def coder_turn(
    session: LoopSession, nid: str, unit_id: str, attempt: int, loop_round: int, hints: str | None
) -> CoderTurn:
    """One coder turn in the unit's worktree, committed; memoised per attempt."""
    done = session.load_outcome(nid, CoderTurn, name=f"a{attempt}-coder")
    if done is not None:
        return done
    worktree = session.worktrees.unit(unit_id)
    files = session.unit_files
    unit, spec = files.unit(unit_id), files.spec(unit_id)
    contract = files.contract(unit_id)
    sdd_record = session.artifacts.latest("sdd", task_id=session.task_id)
    sdd = session.artifacts.read_text(sdd_record) if sdd_record else ""
    context = {
        "Unit": f"{unit_id}: {unit.title}\ncode (you may write only here): {', '.join(unit.code)}",
        "Acceptance criteria": "\n".join(
            f"- {c.id}: {c.text}" + (f" (SDD {c.sdd_section})" if c.sdd_section else "")
            for c in spec.acceptance_criteria
        ),
        "Contract": contract.model_dump_json(indent=1, exclude_none=True) if contract else "(none)",
        "Units it depends on": _dependencies(files, unit) or "(none)",
        "The unit's SDD sections": sdd_sections(sdd, [c.sdd_section for c in spec.acceptance_criteria])
        or "(the SDD names no section for this unit; see the whole SDD in the system prompt)",
    }
    if hints:
        context["PREVIOUS ATTEMPT (fix this first)"] = hints
    answer = session.load_outcome(nid, CoderOutput, name=f"a{attempt}-coder-answer")  # turn done, commit not yet
    if answer is None:
        result = session.run_turn(
            "coder", context, output_model=CoderOutput, node_exec_id=nid, workdir=worktree.path,
            writable=_globs(unit.code), unit_id=unit_id, attempt=attempt, documents={"SDD": sdd},
        )  # fmt: skip
        answer = _coder_answer(session, result, nid, attempt)
        session.save_outcome(nid, answer, name=f"a{attempt}-coder-answer")
    commit = session.commit_work(worktree, f"coder: {unit_id} attempt {attempt}: {answer.summary[:60]}",
                                 node_exec_id=nid, stage="coder", unit_id=unit_id)  # fmt: skip
    log = files.unit_dir(unit_id) / "coder.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    line = f"[round {loop_round} attempt {attempt}] {answer.summary}\n"
    if line not in (log.read_text(encoding="utf-8") if log.exists() else ""):  # a resumed turn logs once
        with log.open("a", encoding="utf-8") as fh:
            fh.write(line)
    turn = CoderTurn(attempt=attempt, commit=commit, files_changed=answer.files, summary=answer.summary)
    session.save_outcome(nid, turn, name=f"a{attempt}-coder")
    if commit:
        diff = session.worktrees.diff(worktree, session.worktrees.integration().branch)
        if diff.strip():
            session.artifacts.write("code_diff", diff, task_id=session.task_id, unit_id=unit_id, suffix=".diff",
                                    title=f"{unit_id} attempt {attempt}")  # fmt: skip
    return turn


def test_unit(
    session: LoopSession, nid: str, unit_id: str, attempt: int, first: int, loop_round: int, code_ref: str | None
) -> TesterOutput:
    """The tester stage in the unit's worktree (a crash gets one tester re-run first); memoised per attempt."""
    done = session.load_outcome(nid, TesterOutput, name=f"a{attempt}-tester")
    if done is not None:
        return done
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
    session.save_outcome(nid, out, name=f"a{attempt}-tester")
    session.artifacts.write(
        "test_report", _report(out), task_id=session.task_id, unit_id=unit_id, title=f"{unit_id} attempt {attempt}"
    )
    return out


def _coder_answer(session: LoopSession, result, nid: str, attempt: int) -> CoderOutput:
    """The coder's answer; a coder that ran out of model calls or time without submitting has still left its work
    in the tree, and that work is tested as this attempt (the next attempt starts from the test's verdict)."""
    if result.ok and result.output is not None:
        return CoderOutput.model_validate(result.output)
    if result.stop_reason in ("max_turns", "timeout"):
        session.timeline("coder_out_of_turns", f"{result.unit_id}: {result.stop_reason} after {result.turns} model "
                         "calls; its changes are tested as this attempt", unit_id=result.unit_id, ref=nid)  # fmt: skip
        return CoderOutput(
            summary=f"(no answer: the turn stopped with {result.stop_reason}; the changes so far are tested)",
            files=result.files_changed,
        )
    raise session.turn_failed("coder", nid, attempt, result)


def sdd_sections(sdd: str, numbers: list[str | None]) -> str:
    """The SDD's sections with these numbers (`## 3.2 Collision` up to the next heading of the same or a higher
    level), in document order."""
    wanted = {n.strip().rstrip(".") for n in numbers if n and n.strip()}
    if not wanted or not sdd:
        return ""
    lines, out, level = sdd.splitlines(), [], 0
    for line in lines:
        stripped = line.lstrip()
        depth = len(stripped) - len(stripped.lstrip("#")) if stripped.startswith("#") else 0
        if depth:
            number = stripped.lstrip("#").strip().split(" ", 1)[0].rstrip(".")
            if number in wanted:
                level = depth
                out.append(line)
                continue
            if level and depth <= level:
                level = 0
        if level:
            out.append(line)
    return "\n".join(out).strip()


def _dependencies(files, unit) -> str:
    lines = []
    for dep in unit.depends_on:
        entry = files.units().get(dep)
        if entry is not None:
            lines.append(f"- {dep}: {', '.join(entry.code)} (read its code to call it; do not change it)")
    return "\n".join(lines)


STACK_CHARS = 1_500


def _crash_reason(session: LoopSession, out: TesterOutput) -> str | None:
    """Why the unit's suite could not run, from the run's result.json (None when it ran, or the file is gone)."""
    if not out.crashed:
        return None
    try:
        result = TesterResult.model_validate_json((session.project.root / out.result_ref).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return result.crash_reason


def _feedback(out: TesterOutput, crash_reason: str | None = None) -> str:
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


def _globs(paths: list[str]) -> list[str]:
    return [p if any(ch in p for ch in "*?[") or "." in p.rsplit("/", 1)[-1] else p.rstrip("/") + "/**" for p in paths]
