"""Validator stage (REQ-04): all tests + the benchmark's checks, then root cause per bug from three perspectives.

1. In the integration worktree run every test and every check of the benchmark
   artifact (a ```checks block of `name: command` lines, each must exit 0), both
   confined as every run of the project's code is (testrun/confine.py).
2. Failures become bugs (source `validator`); with the task's still-active bugs they
   go to the validator role, which judges each bug from three perspectives — spec,
   code, skill — and cites an SDD section and a code location.
3. The decision is ours, not the model's: the three must agree, and a `coder` verdict
   must cite an SDD section that exists and a code line that exists, else the bug is
   `inconclusive_escalate`. Route: coder → fast_lane, planning → full_replan,
   skill_defect → skill_update (the SkillEditor, then the regression gate), inconclusive → escalate to a
   human; core_engine (a defect of GraphLemon itself) → the Coder
   in GraphLemon's own repository (a self-hosted project), a human anywhere else.
4. Bug records get root_cause_category / root_cause_detail / suggested_route; when all
   is green the task's fixed bugs become `verified`.
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from .. import beneath
from ..errors import GraphLemonError
from ..execlogs import log_test_run, write_line
from ..lifecycle import ACTIVE_BUG
from ..models import RootCauseCategory, RunFailure, RunRecord, Stage, TestSummary
from ..nodes import node_exec_id
from ..redact import write_redacted
from ..violations import violation_event
from .outcomes import Attribution, ValidationOutcome
from .own_state import own_state
from .routing import root_cause_route, validator_route
from .session import LoopSession
from .unmerged_code import unmerged_code

if TYPE_CHECKING:
    from ..testrun.confine import Confinement

CHECK_TIMEOUT_S = 120
CITED_FILE_BYTES = 16 * 1024 * 1024
_CHECK_LINE = re.compile(r"^\s*(?P<name>[\w.-]+)(?:\s*\((?P<unit>[\w.-]+)\))?\s*:\s*(?P<cmd>.+?)\s*$")


class Perspective(BaseModel):
    model_config = ConfigDict(extra="forbid")

    category: RootCauseCategory = Field(description="This view's root cause category (the skill explains each)")
    reason: str = Field(min_length=1, description="Why, in one or two sentences, judged from this view alone")


class BugVerdict(BaseModel):
    """A verdict names its bug by `bug_id`, or covers every bug of `unit_id` (optionally only tests containing `test`)."""

    model_config = ConfigDict(extra="forbid")

    bug_id: str | None = Field(default=None, description="The bug this verdict judges, as the context lists it")
    unit_id: str | None = Field(default=None, description="Instead of a bug id: the verdict covers this unit's bugs")
    test: str | None = Field(default=None, description="With a unit id: only its bugs whose test name contains this")
    spec: Perspective = Field(description="The spec view: does the SDD / PRD define the behaviour the test checks?")
    code: Perspective = Field(description="The code view: does the code follow what the SDD says?")
    skill: Perspective = Field(description="The skill view: did a role's skill make it act wrongly?")
    root_cause_detail: str = Field(
        min_length=20, description="The root cause, citing the SDD section and the code location (path:line)"
    )
    sdd_section: str | None = Field(default=None, description="The SDD section number, as its heading starts (3.2)")
    code_location: str | None = Field(default=None, description="path:line of the code at fault")
    skill_role: Stage | None = Field(  # a skill_defect: whose skill (default: the coder's, REQ-08)
        default=None,
        description="For skill_defect: the role whose skill let it happen (planner, coder, tester, integrator, "
        "bug-triager, validator, skill-editor); the coder's when left out",
    )


class ValidatorOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    verdicts: list[BugVerdict] = Field(default_factory=list, description="One verdict per bug the context lists")


class Check(BaseModel):
    name: str
    unit_id: str | None = None
    command: str
    ok: bool = False
    exit_code: int | None = None
    output_tail: str = ""
    confinement: Literal["bwrap", "none"] = "none"  # how it ran (testrun/confine.py)
    refused_reads: list[str] = Field(default_factory=list)  # its files the host would not follow (violations)


def parse_checks(benchmark_md: str) -> list[Check]:
    """The benchmark's ```checks block: `name: command` or `name (unit): command` per line."""
    checks, inside = [], False
    for line in benchmark_md.splitlines():
        if line.strip().startswith("```"):
            inside = line.strip() == "```checks"
            continue
        m = _CHECK_LINE.match(line) if inside else None
        if m:
            checks.append(Check(name=m["name"], unit_id=m["unit"], command=m["cmd"]))
    return checks


def run_check(check: Check, workdir: Path, confinement: Confinement) -> Check:
    """Run one check as an argv list (no shell), confined as a test run is (the same sandbox and settings, refused
    when confinement is `required` and cannot be had); `{python}` is this interpreter."""
    try:
        argv = [sys.executable if part == "{python}" else part for part in shlex.split(check.command)]
    except ValueError as exc:
        return check.model_copy(update={"ok": False, "output_tail": f"the command cannot be split into words: {exc}"})
    if not argv:
        return check.model_copy(update={"ok": False, "output_tail": "the check has no command"})
    from ..testrun.command_run import run_command

    result = run_command(argv, workdir, confinement=confinement, timeout=CHECK_TIMEOUT_S)
    notes = [f"[graphlemon: could not start the command: {result.start_error}]"] if result.start_error else []
    notes += [f"[graphlemon: timed out after {CHECK_TIMEOUT_S} s; the process group was killed]"] * result.timed_out
    notes += [f"[graphlemon: {r}]" for r in result.refused_reads]
    tail = "\n".join([result.output[-1500:].rstrip("\n"), *notes]).strip("\n")
    return check.model_copy(update={"ok": result.ok, "exit_code": result.exit_code, "output_tail": tail,
                                    "confinement": result.confinement, "refused_reads": result.refused_reads})  # fmt: skip


def run_validator(session: LoopSession, loop_round: int) -> ValidationOutcome:
    nid = node_exec_id(session.task_id, "validator", loop_round=loop_round)
    stored = session.enter_node(nid, ValidationOutcome, stage="validator", loop_round=loop_round)
    if stored is not None:
        return stored
    workdir = session.worktrees.integration().path
    run_id = f"val-{session.task_id}-r{loop_round}"
    from ..agents.effects import guard_run, record_run_refusals
    from ..testrun import run_tests
    from ..testrun.confine import for_workdir
    from .validation_suite import ValidationSuite, declared_suite

    confinement = for_workdir(workdir, session.project.state_dir)
    guard = guard_run(workdir, [])  # the validator writes nothing: whatever its run and checks changed is undone
    node = {"node_exec_id": nid, "task_id": session.task_id, "stage": "validator"}
    try:
        suite = declared_suite(workdir, [t for u in session.unit_files.units().units for t in u.tests])
    except GraphLemonError as exc:
        if not beneath.is_refusal(exc):  # a link or FIFO where pyproject.toml is: not read, recorded
            raise
        session.ledger.append(violation_event(exc, what="validation suite", **node))
        suite = ValidationSuite()
    write_line(session.project.state_dir, nid, "tests", f"validation run: {suite.describe()}")
    tests = run_tests(
        workdir, suite.targets, timeout=session.config.test_timeout_s * 3, confinement=confinement, env=suite.env()
    )
    log_test_run(session.project.state_dir, nid, "validation run", tests)
    own = own_state(session)  # this task's units, never another task's bug states
    complete = own.green
    bench = session.artifacts.latest("benchmark", task_id=session.task_id)
    checks = (
        [run_check(c, workdir, confinement) for c in parse_checks(session.artifacts.read_text(bench))]
        if bench and complete else []
    )  # fmt: skip
    record_run_refusals(guard, session.ledger, what="validation run and benchmark checks", result=tests, **node)
    for c in checks:
        for refused in c.refused_reads:
            session.ledger.append(violation_event(refused, what=f"benchmark check {c.name}", **node))
    failed_checks = [c for c in checks if not c.ok]
    if complete:  # with a red unit the product is unfinished: attribute that unit's bugs, don't pile up symptoms
        _open_validation_bugs(session, tests, failed_checks, run_id)
    active = _bugs_to_attribute(session, own.bug_ids)
    _record_run(session, run_id, nid, loop_round, tests, failed_checks, workdir)
    session.nodes.transition(nid, "verifying")
    if complete and tests.ok and not failed_checks and not active:
        for bug in session.bugs.list(task_id=session.task_id, status="fixed"):
            session.bugs.transition(bug.bug_id, "verified", by="validator", fix_refs=[run_id])
        outcome = ValidationOutcome(ok=True, run_id=run_id, route="done")
    else:
        attributions = _attribute(session, nid, loop_round, active, workdir, results=_results_text(tests, checks),
                                  red=own.red_units)  # fmt: skip
        outcome = _decide(run_id, tests.summary.failed, failed_checks, attributions)
    ref = session.save_outcome(nid, outcome)
    session.nodes.transition(nid, "done", output_ref=ref)
    session.timeline("validated", f"round {loop_round}: {'all green' if outcome.ok else outcome.route}", ref=run_id)
    return outcome


def _bugs_to_attribute(session: LoopSession, red_unit_bugs: list[str]) -> list:
    """This task's active bugs, plus the bugs its red units reported (de-duplication may file them under another
    task, in any state: the unit is red here, so they are this task's to attribute)."""
    every = session.bugs.all()
    bugs = [b for b in every.values() if b.task_id == session.task_id and b.status in ACTIVE_BUG]
    seen = {b.bug_id for b in bugs}
    return bugs + [every[i] for i in red_unit_bugs if i in every and i not in seen]


def _open_validation_bugs(session: LoopSession, tests, failed_checks: list[Check], run_id: str) -> None:
    units = session.unit_files.units()
    for f in tests.failures:
        unit = _unit_of(units, f.file or f.name)
        session.bugs.open(
            title=f"{f.name}: {(f.message or 'failed').splitlines()[0][:200]}", source="validator", unit_id=unit,
            test_name=f.name, run_id=run_id, task_id=session.task_id, detail=f.detail or f.message,
            severity="high", by="validator",
        )  # fmt: skip
    for c in failed_checks:
        session.bugs.open(
            title=f"benchmark check {c.name} failed (exit {c.exit_code})", source="validator", unit_id=c.unit_id,
            test_name=f"check:{c.name}", run_id=run_id, task_id=session.task_id,
            detail=f"$ {c.command}\n{c.output_tail}", severity="high", by="validator",
        )  # fmt: skip


def _unit_of(units, path: str) -> str | None:
    path = path.split("::", 1)[0]
    for u in units.units:
        if any(path.startswith(t.rstrip("*").rstrip("/")) for t in u.tests):
            return u.unit_id
    return None


def _record_run(session, run_id, nid, loop_round, tests, failed_checks, workdir) -> None:
    failures = [RunFailure.from_test(f, stack="") for f in tests.failures]
    failures += [RunFailure(test=f"check:{c.name}", message=c.output_tail[-300:], hint=f"run `{c.command}` in the repository")
                 for c in failed_checks]  # fmt: skip
    summary = TestSummary(**tests.summary.model_dump())
    summary.total += len(failed_checks)
    summary.failed += len(failed_checks)
    run_dir = session.project.state_dir / "validation" / "runs" / run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    write_redacted(run_dir / "result.json", tests.model_dump_json(indent=2))
    code_ref = session.worktrees.integration().head()
    session.ledger.append_unique(
        RunRecord(
            run_id=run_id,
            scope="validation",
            task_id=session.task_id,
            node_exec_id=nid,
            loop_round=loop_round,
            code_ref=code_ref,
            ok=tests.ok and not failed_checks,
            crashed=tests.crashed,
            timed_out=tests.timed_out,
            framework=tests.framework,
            summary=summary,
            failures=failures,
            duration_ms=tests.duration_ms,
            result_ref=str((run_dir / "result.json").relative_to(session.project.root)),
            confinement=tests.confinement,
        ),  # fmt: skip
        key=lambda r: r.run_id,
    )


def _results_text(tests, checks: list[Check]) -> str:
    """The validation run and the benchmark checks, as the validator's prompt shows them."""
    s = tests.summary
    lines = [f"test suite: {s.passed}/{s.total} passed, {s.failed} failed, {s.skipped} skipped"
             + (" (crashed)" if tests.crashed else "") + (" (timed out)" if tests.timed_out else "")]  # fmt: skip
    for f in tests.failures[:20]:
        where = f" ({f.file}:{f.line})" if f.file and f.line else ""
        lines.append(f"- {f.name}{where}: {(f.message or 'failed').strip()[:400]}")
    lines += [f"- check {c.name}: {'ok' if c.ok else f'failed (exit {c.exit_code})'}: $ {c.command}"
              + ("" if c.ok else f"\n  {c.output_tail[-400:].strip()}") for c in checks]  # fmt: skip
    return "\n".join(lines)


def _merged_note(session: LoopSession, red: list[str], code_shown: bool) -> str:
    """What the run covered: the integration tree holds only the units merged so far."""
    green = [u for u in session.unit_files.units().ids() if u not in red]
    note = f"The run is of your work tree, which holds the units merged so far: {', '.join(green) or 'none'}.\n"
    if red:
        shown = "; their code is below" if code_shown else ""
        note += (f"Not merged (red), so neither their code nor their tests are in your work tree or in this run: "
                 f"{', '.join(red)}. Their bugs come from their own unit test runs{shown}.\n")  # fmt: skip
    return note


def _attribute(
    session: LoopSession, nid: str, loop_round: int, bugs, workdir: Path, results: str = "", red: list[str] = ()
) -> list[Attribution]:
    sdd_record = session.artifacts.latest("sdd", task_id=session.task_id)
    sdd = session.artifacts.read_text(sdd_record) if sdd_record else ""
    prd_record = session.artifacts.latest("prd", task_id=session.task_id)
    documents = {"SDD": sdd, "PRD": session.artifacts.read_text(prd_record) if prd_record else ""}
    code = unmerged_code(session, [u for u in red if any(b.unit_id == u for b in bugs)])
    context = {
        "Test and check results (this validation run)": _merged_note(session, list(red), bool(code))
        + (results or "(not run)"),
        "Bugs to attribute": "\n".join(
            f"- {b.bug_id} [{b.unit_id or '-'}] {b.title}\n  {(b.detail or '')[:600]}" for b in bugs
        ),
    }
    if code:
        context["Code of the units not merged (from their branches; cite it as path:line)"] = code
    missing = "the validator gave no verdict for this bug"
    try:
        _, answer = session.turn(
            "validator", context, output_model=ValidatorOutput, node_exec_id=nid, workdir=workdir,
            writable=[], attempt=loop_round + 1, documents=documents,
        )  # fmt: skip
    except GraphLemonError as exc:
        if exc.code in ("BUDGET_EXCEEDED", "QUOTA_EXCEEDED", "CLASSIFIER_BLOCKED"):
            raise
        answer, missing = ValidatorOutput(), f"the validator gave no verdict: {exc.message[:600]}"
    self_hosted = session.project.meta.settings.self_hosted
    roots = [workdir, *(p for p in sorted(session.worktrees.base.glob("*")) if (p / ".git").exists())]
    out = []
    for bug in bugs:
        verdict = next((v for v in answer.verdicts if _covers(v, bug)), None)
        attribution = decide_bug(bug.bug_id, bug.unit_id, verdict, sdd, roots, self_hosted=self_hosted, missing=missing)
        fields = {"root_cause_category": attribution.root_cause_category, "root_cause_detail": attribution.root_cause_detail,
                  "suggested_route": attribution.suggested_route}  # fmt: skip
        if attribution.skill_role:
            fields["skill_role"] = attribution.skill_role
        if any(getattr(bug, k) != v for k, v in fields.items()):  # a re-run after a crash records it once
            session.bugs.update(bug.bug_id, by="validator", **fields)
        out.append(attribution)
    return out


def _covers(verdict: BugVerdict, bug) -> bool:
    if verdict.bug_id is not None:
        return verdict.bug_id == bug.bug_id
    if verdict.unit_id is None or verdict.unit_id != bug.unit_id:
        return False
    return verdict.test is None or verdict.test in (bug.test_name or "")


def decide_bug(
    bug_id: str,
    unit_id: str | None,
    verdict: BugVerdict | None,
    sdd: str,
    roots: list[Path],
    *,
    self_hosted: bool = False,
    missing: str = "the validator gave no verdict for this bug",
) -> Attribution:
    """Three perspectives must agree and a coder verdict must cite real places; otherwise inconclusive_escalate.
    `self_hosted`: the project is GraphLemon's own repository (a core_engine bug goes to the Coder there).
    `missing`: why there is no verdict (the turn's end, when it gave none)."""
    if verdict is None:
        return Attribution(
            bug_id=bug_id, unit_id=unit_id, root_cause_category="inconclusive_escalate",
            root_cause_detail=missing, suggested_route="escalate",
        )  # fmt: skip
    views = {"spec": verdict.spec.category, "code": verdict.code.category, "skill": verdict.skill.category}
    category: RootCauseCategory = views["spec"] if len(set(views.values())) == 1 else "inconclusive_escalate"
    detail = verdict.root_cause_detail
    cited = citations_ok(verdict, sdd, roots)
    if category == "coder" and not cited:
        category, detail = (
            "inconclusive_escalate",
            f"{detail} (citations did not verify: {verdict.sdd_section} / {verdict.code_location})",
        )
    elif category == "inconclusive_escalate":
        detail = f"perspectives disagree ({', '.join(f'{k}={v}' for k, v in views.items())}): {detail}"
    return Attribution(
        bug_id=bug_id, unit_id=unit_id, root_cause_category=category, root_cause_detail=detail,
        suggested_route=root_cause_route(category, self_hosted), perspectives=views, citations_verified=cited,  # type: ignore[arg-type]
        skill_role=verdict.skill_role if category == "skill_defect" else None,
    )  # fmt: skip


def citations_ok(verdict: BugVerdict, sdd: str, roots: list[Path]) -> bool:
    """The SDD section is a heading of the SDD and `path:line` is a line of a file in one of the worktrees."""
    wanted = (verdict.sdd_section or "").lower().lstrip("§ ").strip()
    section_ok = bool(wanted) and any(
        line.lstrip("#").strip().lower().startswith(wanted) for line in sdd.splitlines() if line.startswith("#")
    )
    return section_ok and any(_line_exists(verdict.code_location, root) for root in roots)


def _line_exists(location: str | None, root: Path) -> bool:
    """`path:line` names a line of a regular file in the work tree `root` (read without following a link)."""
    if not location or ":" not in location:
        return False
    path, _, line = location.rpartition(":")
    if not line.isdigit():
        return False
    try:
        text = beneath.read_text(root, path, errors="replace", max_bytes=CITED_FILE_BYTES)
    except (OSError, GraphLemonError):
        return False
    return 1 <= int(line) <= len(text.splitlines())


def _decide(
    run_id: str, failed_tests: int, failed_checks: list[Check], attributions: list[Attribution]
) -> ValidationOutcome:
    route, reason = validator_route(attributions)
    fix = sorted({a.unit_id for a in attributions if a.suggested_route == "fast_lane" and a.unit_id})
    feedback: dict[str, str] = {}
    for a in attributions:
        if a.unit_id:
            feedback[a.unit_id] = (feedback.get(a.unit_id, "") + f"- bug {a.bug_id}: {a.root_cause_detail}\n").strip()
    return ValidationOutcome(
        ok=False, run_id=run_id, route=route, failures=failed_tests + len(failed_checks),  # type: ignore[arg-type]
        checks_failed=[c.name for c in failed_checks], attributions=attributions, units_to_fix=fix,
        feedback=feedback, blocked_reason=reason,  # type: ignore[arg-type]
    )  # fmt: skip
