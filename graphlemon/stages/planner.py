"""Planner stage (REQ-02): BRD / PRD / SDD / benchmark, units, specs, contracts, integration cases.

The planner role works in a scratch work tree of the repository's HEAD (never the person's own work tree; it is
removed after the turn with whatever the turn left there) and writes drafts to its `.graphlemon/plan/drafts/`
(brd.md, prd.md, sdd.md, benchmark.md, plan.json), which the stage reads back through the safe reader
(`beneath`: a link or a FIFO there is not followed, and recorded as a violation); the stage then *verifies* them
(`check_plan`: structure and contradictions). A contradiction sends the node to
`reflecting` and re-plans with the violations as feedback; only a consistent plan
is written as versioned artifacts with lineage sdd → prd → brd (benchmark → sdd)
plus units.json and each unit's spec.json / contract.json.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .. import beneath
from ..agents.executor_seam import MISBEHAVIOUR
from ..agents.schemas import model_schema
from ..errors import ErrorCode, GraphLemonError
from ..models import SddPatch
from ..nodes import node_exec_id
from ..units import AcceptanceCriterion, Contract, ContractExports, IntegrationSpec, UnitEntry, UnitsFile, UnitSpec
from ..violations import violation_event
from .outcomes import PlanOutcome
from .session import LoopSession

DRAFTS = Path("plan") / "drafts"
DRAFTS_IN_TREE = Path(".graphlemon") / DRAFTS  # in the planner's scratch work tree
DRAFT_MAX_BYTES = 4 * 1024 * 1024
ENDED_WITHOUT_ANSWER = ("max_turns", "timeout", *MISBEHAVIOUR)  # the drafts it wrote are checked all the same
DOCS = ("brd", "prd", "sdd", "benchmark")
_ASSUMPTION = re.compile(r"^\s*[-*]\s*([A-Za-z][\w .-]{0,60}?)\s*:\s*(.+?)\s*$")


class PlannedUnit(BaseModel):
    model_config = ConfigDict(extra="forbid")

    unit_id: str
    title: str = ""
    summary: str = ""
    code: list[str] = Field(min_length=1)
    tests: list[str] = Field(min_length=1)
    depends_on: list[str] = Field(
        default_factory=list, description="The units whose code this unit calls: they are built and merged first"
    )
    acceptance_criteria: list[AcceptanceCriterion] = Field(min_length=1)
    contract: ContractExports | None = None


class PlanDoc(BaseModel):
    """`plan.json` in the drafts folder."""

    model_config = ConfigDict(extra="forbid")

    units: list[PlannedUnit] = Field(min_length=1)
    integration: IntegrationSpec = Field(default_factory=IntegrationSpec)


class PlannerOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    summary: str = Field(
        min_length=1, description="A few sentences: what the plan holds, the assumptions it makes, open questions"
    )


class Drafts(BaseModel):
    docs: dict[str, str]
    plan: PlanDoc


def run_planner(session: LoopSession, loop_round: int, feedback: str | None = None) -> PlanOutcome:
    """Plan (or re-plan) the task; returns the artifact ids, or ok=False with the violations."""
    nid = node_exec_id(session.task_id, "planner", loop_round=loop_round)
    node = session.nodes.find(nid)
    done = session.load_outcome(nid, PlanOutcome)  # finished (either way) before: replay it
    if done is not None:
        if node is not None and node.status not in ("done", "blocked"):  # killed between the record and the status
            session.nodes.transition(nid, "done" if done.ok else "blocked")
        return done
    task = session.board.get(session.task_id)
    attempt = node.attempt if node is not None else 1
    violations: list[str] = []
    while True:
        session.enter_node(nid, PlanOutcome, stage="planner", loop_round=loop_round, attempt=attempt)
        context = _context(task.goal_text, loop_round, feedback, violations)
        with session.worktrees.scratch("planner") as scratch:  # never the person's own work tree
            beneath.write_bytes(scratch.path, DRAFTS_IN_TREE / ".keep", b"")  # the folder the turn writes in
            result = session.run_turn(
                "planner",
                context,
                output_model=PlannerOutput,
                node_exec_id=nid,
                workdir=scratch.path,
                writable=[f"{DRAFTS_IN_TREE.as_posix()}/**"],
                attempt=attempt,
            )
            if not result.ok and result.stop_reason not in ENDED_WITHOUT_ANSWER:
                raise session.turn_failed("planner", nid, attempt, result)
            session.nodes.transition(nid, "verifying", attempt=attempt)
            # a turn that ended without an answer may have written them
            drafts, violations, refused = read_drafts(scratch.path)
        for err in refused:  # a link or FIFO where a draft should be: not followed, recorded
            session.ledger.append(violation_event(err, what="planner drafts", node_exec_id=nid,
                                                  task_id=session.task_id, stage="planner", attempt=attempt))  # fmt: skip
        if drafts is not None:
            violations = check_plan(drafts)
        if violations and not result.ok:
            violations.insert(0, f"your turn ended without an answer ({result.stop_reason}: {result.output_error})")
        if not violations:
            outcome = _write_plan(session, drafts, attempt)  # type: ignore[arg-type]
            ref = session.save_outcome(nid, outcome)
            session.nodes.transition(nid, "done", attempt=attempt, output_ref=ref)
            session.timeline(
                "planned", f"round {loop_round}: {len(outcome.unit_ids)} units, attempt {attempt}", ref=nid
            )
            return outcome
        session.nodes.transition(nid, "reflecting", attempt=attempt, error="; ".join(violations)[:2000])
        session.timeline("plan_rejected", f"consistency check: {violations[0]}", ref=nid)
        if attempt >= session.config.max_plan_attempts:
            outcome = PlanOutcome(ok=False, attempts=attempt, violations=violations)
            ref = session.save_outcome(nid, outcome)
            session.nodes.transition(
                nid,
                "blocked",
                attempt=attempt,
                error_code="PLAN_INCONSISTENT",
                error="; ".join(violations)[:2000],
                output_ref=ref,
            )
            return outcome
        attempt += 1
        session.nodes.transition(nid, "retrying", attempt=attempt)


def _context(goal: str, loop_round: int, feedback: str | None, violations: list[str]) -> dict[str, str]:
    context = {
        "Goal": goal,
        "Round": f"loop_round {loop_round}",
        "What to write": (
            f"Write these files under {DRAFTS_IN_TREE.as_posix()}/: brd.md, prd.md (with an '## Assumptions' "
            "list of `- key: value` lines), sdd.md (one section per unit, numbered like `## 3.2 Collision`), "
            "benchmark.md (with a fenced code block tagged checks, one `name: command` line per check that must exit 0), and plan.json "
            "(a JSON object matching the plan.json schema below: each unit's code and test paths, its criteria "
            "with ids AC1, AC2, ... citing SDD sections, its contract; the integration cases). Then submit a "
            "short summary."
        ),
        "How the benchmark's checks run": (
            "After every unit is green and merged, the Validator runs each check in the merged work tree (the "
            "repository root, with every unit's code). A command is split into words like a shell would and run "
            "without a shell: no pipes, `&&`, redirections, globs or variables. `{python}` is replaced by the "
            "Python interpreter GraphLemon runs under. Checks run confined like the tests (no network, a private home "
            "and /tmp). A check passes when it exits 0 within 120 seconds."
        ),
        "plan.json schema": "```json\n" + json.dumps(model_schema(PlanDoc), separators=(",", ":")) + "\n```",
    }
    if feedback:
        context["Feedback from the last round"] = feedback
    if violations:
        context["Your last plan was rejected"] = "\n".join(f"- {v}" for v in violations)
    return context


def read_drafts(root: Path) -> tuple[Drafts | None, list[str], list[GraphLemonError]]:
    """The drafts a planner turn wrote in `root` (its scratch work tree), read through the safe reader: a draft
    that is a link, a FIFO or a folder is not read (a problem, and a refusal for the caller to record).
    -> (the drafts or None, the problems, the refusals)."""
    docs, problems, refused = {}, [], []

    def read(name: str) -> str | None:
        try:
            return beneath.read_text(root, DRAFTS_IN_TREE / name, max_bytes=DRAFT_MAX_BYTES)
        except FileNotFoundError:
            return None
        except UnicodeDecodeError:
            problems.append(f"{name} is not UTF-8 text")
            return ""
        except GraphLemonError as exc:
            if beneath.is_refusal(exc):
                refused.append(exc)
            problems.append(f"{name} could not be read: {exc.message}")
            return ""

    for name in DOCS:
        text = read(f"{name}.md") or ""
        if not text.strip():
            problems.append(f"{name}.md is missing or empty")
        docs[name] = text
    plan_text = read("plan.json")
    if plan_text is None:
        problems.append("plan.json is missing")
        return None, problems, refused
    try:
        plan = PlanDoc.model_validate_json(plan_text)
    except ValidationError as exc:
        first = exc.errors()[0]
        problems.append(f"plan.json: {'.'.join(str(p) for p in first.get('loc', ()))}: {first.get('msg')}")
        return None, problems, refused
    return (Drafts(docs=docs, plan=plan), problems, refused) if not problems else (None, problems, refused)


def assumptions(prd: str) -> dict[str, list[str]]:
    """`- key: value` lines of the PRD's Assumptions section -> key -> values."""
    out: dict[str, list[str]] = {}
    in_section = False
    for line in prd.splitlines():
        if line.lstrip().startswith("#"):
            in_section = "assumption" in line.lower()
            continue
        m = _ASSUMPTION.match(line) if in_section else None
        if m:
            out.setdefault(m.group(1).strip().lower(), []).append(m.group(2).strip())
    return out


def check_plan(drafts: Drafts) -> list[str]:
    """The consistency check run in `verifying`: every problem found, in words."""
    problems: list[str] = []
    for key, values in assumptions(drafts.docs["prd"]).items():
        distinct = sorted({v.lower().rstrip(".") for v in values})
        if len(distinct) > 1:
            problems.append(
                f"PRD assumptions contradict each other on '{key}': " + " vs ".join(repr(v) for v in distinct)
            )
    units = drafts.plan.units
    ids = [u.unit_id for u in units]
    problems += [f"unit id {i!r} is declared twice" for i in sorted({i for i in ids if ids.count(i) > 1})]
    known = set(ids)
    for u in units:
        problems += [f"unit {u.unit_id} depends on unknown unit {d!r}" for d in u.depends_on if d not in known]
        if u.unit_id not in drafts.docs["sdd"]:
            problems.append(f"the SDD never mentions unit {u.unit_id}")
        sections = _headings(drafts.docs["sdd"])
        for c in u.acceptance_criteria:
            if c.sdd_section and not any(c.sdd_section.lower() in h for h in sections):
                problems.append(f"{u.unit_id} {c.id} cites SDD section {c.sdd_section!r}, which the SDD does not have")
    problems += _cycles(units)
    problems += _overlaps(units)
    for case in drafts.plan.integration.cases:
        problems += [
            f"integration case {case.case} involves unknown unit {i!r}" for i in case.involves if i not in known
        ]
    return problems


def _headings(markdown: str) -> list[str]:
    return [line.lstrip("#").strip().lower() for line in markdown.splitlines() if line.startswith("#")]


def _cycles(units: list[PlannedUnit]) -> list[str]:
    deps = {u.unit_id: set(u.depends_on) for u in units}
    done: set[str] = set()
    while True:
        ready = {u for u, d in deps.items() if u not in done and d <= done}
        if not ready:
            break
        done |= ready
    stuck = sorted(set(deps) - done)
    return [f"units depend on each other in a cycle: {', '.join(stuck)}"] if stuck else []


def _overlaps(units: list[PlannedUnit]) -> list[str]:
    owners: dict[str, str] = {}
    problems = []
    for u in units:
        for path in u.code:
            norm = path.rstrip("/")
            if norm in owners and owners[norm] != u.unit_id:
                problems.append(
                    f"units {owners[norm]} and {u.unit_id} both own {path} (their worktrees would conflict)"
                )
            owners.setdefault(norm, u.unit_id)
    return problems


def waves(units: UnitsFile, only: set[str] | None = None) -> list[list[str]]:
    """Units in dependency order: each wave depends only on earlier waves (independent units run in parallel)."""
    wanted = only if only is not None else set(units.ids())
    deps = {u.unit_id: {d for d in u.depends_on if d in wanted} for u in units.units if u.unit_id in wanted}
    out, done = [], set()
    while len(done) < len(deps):
        ready = sorted(u for u, d in deps.items() if u not in done and d <= done)
        if not ready:
            raise GraphLemonError(
                ErrorCode.INVALID_PARAM, f"units.json has a dependency cycle among {sorted(set(deps) - done)}"
            )
        out.append(ready)
        done |= set(ready)
    return out


def _write_plan(session: LoopSession, drafts: Drafts, attempt: int) -> PlanOutcome:
    store, files, task_id = session.artifacts, session.unit_files, session.task_id
    brd = store.write("brd", drafts.docs["brd"], task_id=task_id, title="Business requirements")
    prd = store.write(
        "prd", drafts.docs["prd"], task_id=task_id, depends_on=[brd.artifact_id], title="Product requirements"
    )
    sdd = store.write("sdd", drafts.docs["sdd"], task_id=task_id, depends_on=[prd.artifact_id], title="Software design")
    bench = store.write(
        "benchmark", drafts.docs["benchmark"], task_id=task_id, depends_on=[sdd.artifact_id], title="Benchmark"
    )
    plan = drafts.plan
    files.write_units(
        UnitsFile(
            units=[
                UnitEntry(unit_id=u.unit_id, title=u.title, code=u.code, tests=u.tests, depends_on=u.depends_on)
                for u in plan.units
            ]
        )
    )
    for u in plan.units:
        files.write_spec(UnitSpec(unit_id=u.unit_id, summary=u.summary, acceptance_criteria=u.acceptance_criteria))
        files.write_contract(Contract(unit_id=u.unit_id, exports=u.contract or ContractExports()))
    files.write_integration_spec(plan.integration)
    ids = {"brd": brd.artifact_id, "prd": prd.artifact_id, "sdd": sdd.artifact_id, "benchmark": bench.artifact_id}
    return PlanOutcome(ok=True, attempts=attempt, artifact_ids=ids, unit_ids=[u.unit_id for u in plan.units])


def apply_sdd_patch(session: LoopSession, patch: SddPatch, *, reason: str) -> str:
    """Planner patch mode (contract_mismatch, will_auto_apply): a new SDD version with the patch under its section."""
    store = session.artifacts
    current = store.latest("sdd", task_id=session.task_id)
    if current is None:
        raise GraphLemonError(ErrorCode.ARTIFACT_NOT_FOUND, "no SDD to patch: the planner has not run for this task")
    text = store.read_text(current)
    new_text = patch_markdown(text, patch)
    record = store.write(
        "sdd",
        new_text,
        task_id=session.task_id,
        depends_on=current.depends_on_artifact_ids,
        title=f"Software design ({reason})",
    )
    return record.artifact_id


def patch_markdown(text: str, patch: SddPatch) -> str:
    """Insert the patch text at the end of the section whose heading contains `target_section`."""
    target = patch.target_section.lstrip("#").strip().lower()
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("#") and target in line.lower()), None)
    note = f"> patch ({patch.op}): {patch.text.strip()}"
    if start is None:
        raise GraphLemonError(
            ErrorCode.INVALID_PARAM, f"SDD patch targets section {patch.target_section!r}, which the SDD does not have"
        )
    level = len(lines[start]) - len(lines[start].lstrip("#"))
    end = next(
        (
            i
            for i in range(start + 1, len(lines))
            if lines[i].startswith("#") and len(lines[i]) - len(lines[i].lstrip("#")) <= level
        ),
        len(lines),
    )
    return "\n".join([*lines[:end], "", note, "", *lines[end:]]).rstrip() + "\n"
