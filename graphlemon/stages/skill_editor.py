"""The skill-update stage (REQ-08): a `skill_defect` attribution → a SkillEditor turn → one commit → the gate.

`run_skill_update(session, loop_round)` reads the round's validator outcome, takes its
first skill_defect bug, asks the `skill-editor` role (through the Executor: scripted,
anthropic and claude_code alike) for the new text of the blamed role's skill, commits it
as a proposed iteration, and gates it (`gate_iteration`): the node that showed the bug is
replayed with the new skill in a throw-away worktree; the bug's failing test must pass
and no unit green with the old skill may turn red. Pass → `applied` and the task's skills
pin moves to the new commit; fail → `rejected` (the commit reverted). `routing.after_skill_update`
decides what the loop does next.

The gate replays Coder nodes (a bug is found in a unit's code); a skill of another role
has no node to replay here yet, so its iterations are rejected with that reason and a
person decides.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from .. import gitrun
from ..agents.roles import writable_globs
from ..bugs import Bug
from ..errors import ErrorCode, GraphLemonError
from ..models import SkillGateResult
from ..nodes import node_exec_id
from ..skills.iteration import SkillIteration, SkillIterations, blamed_skill
from ..skills.repo import SkillRepo, repin
from ..testrun.result_models import TestRunResult
from ..violations import violation_event
from ..worktrees import IDENTITY
from .coder import CoderOutput, prior_attempts
from .outcomes import SkillUpdateOutcome, ValidationOutcome
from .session import LoopSession


class SkillEdit(BaseModel):
    """The skill-editor role's answer: the whole new skill and why."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1, description="The whole new skill, every section heading and the first line kept")
    rationale: str = Field(
        min_length=1, description="Two or three sentences: which defect, which change, why it generalises"
    )


def run_skill_update(session: LoopSession, loop_round: int) -> SkillUpdateOutcome:
    """The round's first skill_defect bug → one gated skill iteration (memoised per round). A bug that may not drive
    another iteration (`SkillIterations.check_trigger`: one standing change per bug, at most
    `MAX_ITERATIONS_PER_BUG` in all) is not edited again: the outcome says why and the task goes to a person."""
    nid = node_exec_id(session.task_id, "skill-editor", loop_round=loop_round)
    stored = session.enter_node(nid, SkillUpdateOutcome, stage="skill-editor", loop_round=loop_round)
    if stored is not None:
        return stored
    validation = session.load_outcome(
        node_exec_id(session.task_id, "validator", loop_round=loop_round), ValidationOutcome
    )
    blamed = [a for a in (validation.attributions if validation else []) if a.root_cause_category == "skill_defect"]
    if not blamed:
        raise GraphLemonError(ErrorCode.INVALID_PARAM, f"round {loop_round} attributed no bug to a skill defect")
    bug = session.bugs.get(blamed[0].bug_id)
    iterations = SkillIterations(session.project.state_dir, session.ledger)
    it = _resumable(iterations, session.task_id, bug.bug_id)
    if it is None:
        try:
            iterations.check_trigger(blamed_skill(bug), bug.bug_id)
        except GraphLemonError as exc:
            outcome = SkillUpdateOutcome(
                ok=False,
                bug_id=bug.bug_id,
                unit_id=bug.unit_id,
                skill=blamed_skill(bug),  # type: ignore[arg-type]
                note=exc.message,
            )
            session.nodes.transition(nid, "done", output_ref=session.save_outcome(nid, outcome))
            return outcome
        it = _propose(session, iterations, bug, nid, loop_round)
    outcome = finish_iteration(session, iterations, it, bug, nid)
    ref = session.save_outcome(nid, outcome)
    session.nodes.transition(nid, "done", output_ref=ref)
    return outcome


def finish_iteration(
    session: LoopSession,
    iterations: SkillIterations,
    it: SkillIteration,
    bug: Bug,
    nid: str,
    before: TestRunResult | None = None,
) -> SkillUpdateOutcome:
    """Gate a proposed iteration, then apply it (re-pinning the task) or reject it (reverted)."""
    if it.status == "proposed":
        it = iterations.start_gate(it.iteration_id)
    gate = gate_iteration(session, it, bug, nid, before)
    if gate.ok:
        it = iterations.apply(it.iteration_id, gate)
        repin(session.ledger, session.task_id, it.commit, it.iteration_id)
        session.timeline("skill_applied", f"{it.skill} skill {it.iteration_id} applied: {gate.note}", ref=it.commit)
    else:
        it = iterations.reject(it.iteration_id, gate)
        session.timeline("skill_rejected", f"{it.skill} skill {it.iteration_id} rejected: {gate.note}", ref=it.commit)
    return SkillUpdateOutcome(
        ok=gate.ok, bug_id=bug.bug_id, unit_id=bug.unit_id, skill=it.skill, iteration_id=it.iteration_id,  # type: ignore[arg-type]
        status=it.status, commit=it.commit, gate=gate, note=gate.note,
    )  # fmt: skip


def _resumable(iterations: SkillIterations, task_id: str, bug_id: str) -> SkillIteration | None:
    """An iteration for this bug a killed run left proposed or mid-gate: gate it again rather than re-propose."""
    open_ = [
        it
        for it in iterations.list()
        if it.task_id == task_id and it.triggered_by_bug_id == bug_id and it.status in ("proposed", "gating")
    ]
    return open_[-1] if open_ else None


def _propose(session: LoopSession, iterations: SkillIterations, bug: Bug, nid: str, loop_round: int) -> SkillIteration:
    role = blamed_skill(bug)
    current = SkillRepo(session.project.state_dir).text_at(role, session.skill_commit)
    context = {
        "Skill to change": role,
        "Bug": f"{bug.bug_id} [{bug.unit_id or '-'}] {bug.title}\nfailing test: {bug.test_name or '-'}",
        "Evidence": (bug.detail or "(none)")[:4000],
        "Root cause (validator)": bug.root_cause_detail or "(none)",
        f"Current {role} skill": current,
    }
    _, edit = session.turn(
        "skill-editor", context, output_model=SkillEdit, node_exec_id=nid, workdir=iterations.repo.path,
        writable=[], attempt=loop_round + 1, skill_vars={"target_role": role},
    )  # fmt: skip
    return iterations.propose(
        role, bug.bug_id, edit.text, author="skill-editor", rationale=edit.rationale, task_id=session.task_id
    )


# -- the regression gate --------------------------------------------------------------------------


def gate_iteration(
    session: LoopSession, it: SkillIteration, bug: Bug, nid: str, before: TestRunResult | None = None
) -> SkillGateResult:
    """Replay the node that showed the bug with the new skill, in a worktree of the integration branch with the
    unit's branch merged: the bug's test must fail before the replay (the old skill's code) and pass after it, and
    no unit green before may be red after. `before`: that first run, when the caller already made it."""
    refused = replay_refusal(it.skill, bug)
    if refused:
        return SkillGateResult(ok=False, bug_test=bug.test_name, note=refused)
    path = session.worktrees.base / f"_skillgate-{it.iteration_id}"
    replayed = None
    try:
        _gate_worktree(session, bug.unit_id or "", path)
        if before is None:
            before = _gate_run(session, path, nid, "skill gate: before the replay (old skill)")
        if not failing(before, bug.test_name):
            return judge(before, None, bug.test_name, _unit_tests(session), None)
        attempt = prior_attempts(session, bug.unit_id or "", nid) + 1
        replayed = f"{nid}-replay-{bug.unit_id}-a{attempt}"
        _replay_coder(session, it, bug, replayed, path, attempt)
        after = _gate_run(session, path, nid, f"skill gate: after replaying {replayed} (new skill)")
    except GraphLemonError as exc:
        return SkillGateResult(ok=False, bug_test=bug.test_name, note=f"the replay failed: {exc.code}: {exc.message}")
    finally:
        _remove_worktree(session, path)
    return judge(before, after, bug.test_name, _unit_tests(session), replayed)


def replay_refusal(skill: str, bug: Bug) -> str | None:
    """Why the gate cannot prove anything for this bug and skill (None: it can)."""
    if skill != "coder" or not bug.unit_id:
        return f"the gate can replay Coder nodes only; a {skill} skill change needs a person to judge it"
    if not bug.test_name:
        return f"bug {bug.bug_id} names no failing test: the gate has no test to see fail before and pass after"
    return None


def reproduce(session: LoopSession, bug: Bug) -> TestRunResult:
    """The gate's first run on its own: the tests of the integration branch with the bug's unit merged (the code the
    old skill produced). `skills update` runs it before anything is written."""
    path = session.worktrees.base / f"_skillgate-check-{bug.bug_id}"
    try:
        _gate_worktree(session, bug.unit_id or "", path)
        return _gate_run(session, path, None, "")
    finally:
        _remove_worktree(session, path)


def _gate_run(session: LoopSession, path: Path, nid: str | None, what: str) -> TestRunResult:
    from ..execlogs import log_test_run
    from ..testrun import run_tests
    from ..testrun.confine import for_workdir

    # agent-written code (the unit as the old or the new skill made it): confined as every run of the project's code
    run = run_tests(path, timeout=session.config.test_timeout_s * 3,
                    confinement=for_workdir(path, session.project.state_dir))  # fmt: skip
    log_test_run(session.project.state_dir, nid, what, run)
    for refused in run.refused_reads if nid else []:  # a link or FIFO the run planted for the host: not followed
        session.ledger.append(violation_event(refused, node_exec_id=nid, stage="skill-editor", task_id=session.task_id,
                                              what=what or "skill gate run"))  # fmt: skip
    return run


def failing(run: TestRunResult, bug_test: str | None) -> bool:
    """The bug's test is red in this run."""
    return bug_test is not None and (
        any(_same_test(f.name, bug_test) for f in run.failures)
        or any(c.status in ("failed", "error") and _same_test(c.name, bug_test) for c in run.cases)
    )


def judge(
    before: TestRunResult,
    after: TestRunResult | None,
    bug_test: str | None,
    unit_tests: dict[str, list[str]],
    replayed: str | None,
) -> SkillGateResult:
    """The gate's verdict from the runs before and after the replay (pure). It passes only when the bug's test
    fails before and passes after, no unit green before is red after, and the run did not crash. `after` None:
    the bug's test did not fail before, so nothing was replayed (the change proves nothing)."""
    red_before = _red_units(before, unit_tests)
    tested = {u for c in before.cases if (u := _unit_of(c.file or c.name, unit_tests))}
    green_before = sorted(tested - red_before)
    failed_before = failing(before, bug_test)
    if after is None or not failed_before:
        return SkillGateResult(
            ok=False, bug_test=bug_test, green_before=green_before, failed_before=[f.name for f in before.failures],
            note=f"refused: the bug's test {bug_test or '-'} already passes with the old skill's code, so the gate "
            "cannot show that the new skill fixes anything",
        )  # fmt: skip
    newly_red = sorted(set(green_before) & _red_units(after, unit_tests))
    passed = bug_test is not None and any(
        c.status == "passed" and _same_test(c.name, bug_test) for c in after.cases
    ) and not failing(after, bug_test)  # fmt: skip
    ok = passed and not newly_red and not after.crashed
    why = (
        "the gate passed: the bug's test failed with the old skill and passes with the new one, and every unit "
        "green before is still green"
        if ok
        else "; ".join(
            part
            for part in (
                "the test run crashed" if after.crashed else "",
                f"the bug's test {bug_test} still fails" if not passed else "",
                f"unit(s) green with the old skill turned red: {', '.join(newly_red)}" if newly_red else "",
            )
            if part
        )
    )
    return SkillGateResult(
        ok=ok, replayed_node=replayed, bug_test=bug_test, bug_test_passed=passed, green_before=green_before,
        newly_red=newly_red, failed_before=[f.name for f in before.failures], failed_after=[f.name for f in after.failures],
        note=why,
    )  # fmt: skip


def _replay_coder(session: LoopSession, it: SkillIteration, bug: Bug, nid: str, path: Path, attempt: int) -> None:
    unit_id = bug.unit_id or ""
    unit = session.unit_files.unit(unit_id)
    sdd = session.artifacts.latest("sdd", task_id=session.task_id)
    context = {
        "Unit": f"{unit_id}: {unit.title}\ncode (you may write only here): {', '.join(unit.code)}",
        "SDD": session.artifacts.read_text(sdd) if sdd else "(no SDD)",
        "Fix these (from the tester / validator)": f"- bug {bug.bug_id}: {bug.root_cause_detail or bug.title}",
    }
    session.turn(
        "coder", context, output_model=CoderOutput, node_exec_id=nid, workdir=path,
        writable=writable_globs("coder", unit_id=unit_id, run_id=None), unit_id=unit_id, attempt=attempt,
        skill_commit=it.commit,
    )  # fmt: skip


def _gate_worktree(session: LoopSession, unit_id: str, path: Path) -> None:
    """A detached worktree of the integration branch with the unit's branch merged (its code and its tests)."""
    wts = session.worktrees
    integration = wts.integration()
    _remove_worktree(session, path)
    _git(wts.repo_root, "worktree", "add", "--detach", str(path), integration.branch)
    branches = _git(wts.repo_root, "branch", "--list", wts.branch(unit_id))
    if branches.strip():
        _git(path, "merge", "--no-edit", "-m", f"skill gate: {unit_id}", wts.branch(unit_id))


def _remove_worktree(session: LoopSession, path: Path) -> None:
    if path.exists():
        _git(session.worktrees.repo_root, "worktree", "remove", "--force", str(path), check=False)
        shutil.rmtree(path, ignore_errors=True)
    _git(session.worktrees.repo_root, "worktree", "prune", check=False)


def _git(cwd: Path, *args: str, check: bool = True) -> str:
    proc = gitrun.text(cwd, *args, env=IDENTITY)
    if check and proc.returncode != 0:
        raise GraphLemonError(ErrorCode.GIT_ERROR, f"git {args[0]} for the skill gate failed: {proc.stderr.strip()}")
    return proc.stdout


def _unit_tests(session: LoopSession) -> dict[str, list[str]]:
    return {u.unit_id: list(u.tests) for u in session.unit_files.units().units}


def _unit_of(path: str, unit_tests: dict[str, list[str]]) -> str | None:
    path = path.split("::", 1)[0]
    for unit_id, globs in unit_tests.items():
        if any(g.rstrip("*").rstrip("/") and path.startswith(g.rstrip("*").rstrip("/")) for g in globs):
            return unit_id
    return None


def _red_units(run: TestRunResult, unit_tests: dict[str, list[str]]) -> set[str]:
    names = [c.file or c.name for c in run.cases if c.status in ("failed", "error")] + [
        f.file or f.name for f in run.failures
    ]
    return {u for n in names if (u := _unit_of(n, unit_tests))}


def _same_test(name: str, wanted: str) -> bool:
    return name == wanted or name.endswith("::" + wanted) or wanted.endswith("::" + name)


def gate_for_person(
    project, iterations: SkillIterations, role: str, bug: Bug, text: str, rationale: str
) -> SkillIteration:
    """`graphlemon skills update`: whatever the gate can tell before the replay is checked before anything is
    written — a bug of no task (nothing to replay), a skill the gate cannot replay, a bug whose test already
    passes (INVALID_PARAM). Then the proposal goes through the same gate, replayed in the bug's task with the task's
    recorded settings (its executor), as a node of that task (`ne-<task>-skill-editor-<iteration>`): its record and
    log hold the gate's runs."""
    from ..execlogs import log_test_run, write_line
    from .session import LoopConfig

    if not bug.task_id:
        raise GraphLemonError(
            ErrorCode.INVALID_PARAM, f"bug {bug.bug_id} belongs to no task: the gate has no node to replay",
            bug_id=bug.bug_id,
        )  # fmt: skip
    refused = replay_refusal(role, bug)
    if refused:
        raise GraphLemonError(ErrorCode.INVALID_PARAM, refused, bug_id=bug.bug_id)
    session = LoopSession(project, bug.task_id, LoopConfig.load(project.state_dir, bug.task_id))
    before = reproduce(session, bug)
    if not failing(before, bug.test_name):
        why = judge(before, None, bug.test_name, _unit_tests(session), None).note
        raise GraphLemonError(ErrorCode.INVALID_PARAM, f"{why}; nothing was written", bug_id=bug.bug_id)
    it = iterations.propose(role, bug.bug_id, text, author="human", rationale=rationale)
    nid = f"ne-{bug.task_id}-skill-editor-{it.iteration_id}"
    session.enter_node(
        nid, SkillUpdateOutcome, stage="skill-editor", loop_round=session.board.get(bug.task_id).loop_round
    )
    state_dir = project.state_dir
    write_line(
        state_dir, nid, "node", f"a person's {role} skill change {it.iteration_id} (bug {bug.bug_id}): {rationale}"
    )
    log_test_run(state_dir, nid, "skill gate: before the replay (old skill)", before)
    outcome = finish_iteration(session, iterations, it, bug, nid, before)
    session.nodes.transition(nid, "done", output_ref=session.save_outcome(nid, outcome))
    return iterations.get(it.iteration_id)
