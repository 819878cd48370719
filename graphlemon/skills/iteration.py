"""Skill iterations (REQ-08): a skill change triggered by a bug, as one commit in the skills repository.

An iteration is `proposed` (its commit made), then `gating` (the node that showed the
bug is replayed with the new text, `stages/skill_editor.py`), then `applied`, or
`rejected` (its commit reverted by a new commit). An applied iteration can be
`rolled_back` (reverted again as a new commit; history is never rewritten). The
current state is the fold of `skill_iterations.ndjson`; `skill_log` / `iteration_detail`
are what the CLI and the console read.

Rules: an iteration needs the bug that triggered it, and that bug must be attributed
to a defect of this role's skill (`root_cause_category: skill_defect`; a bug that does
not name the skill is blamed on the Coder's, the role that writes the code a bug is found in).
Rolling back refuses while a later applied iteration of the same skill stands on it:
roll those back first, newest first.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, Field

from .. import lifecycle
from ..bugs import Bug, BugTracker
from ..errors import ErrorCode, GraphLemonError, invalid_param
from ..models import SkillGateResult, SkillIterationEvent, SkillIterationStatus, utcnow
from . import ROLES
from .repo import SkillRepo, repin_reverted

MAX_ITERATIONS_PER_BUG = 3  # one bug's evidence justifies a few attempts at a skill, then a person judges
DEFAULT_SKILL_ROLE = "coder"  # the role whose output a bug is found in, when the validator names no skill
_SET_ON_PROPOSE = (
    "skill",
    "parent_commit",
    "commit",
    "triggered_by_bug_id",
    "task_id",
    "author",
    "rationale",
    "diff_stat",
)


class SkillIteration(BaseModel):
    """The current state of one iteration (a fold of its events)."""

    iteration_id: str
    status: SkillIterationStatus
    skill: str
    parent_commit: str
    commit: str
    triggered_by_bug_id: str
    task_id: str | None = None
    author: str
    rationale: str = ""
    diff_stat: str = ""
    gate: SkillGateResult | None = None
    revert_commit: str | None = None
    created_at: datetime
    updated_at: datetime
    history: list[str] = Field(default_factory=list)  # "ts status by: note"


class IterationDetail(BaseModel):
    """`skills show`: the iteration, its diff, the bug that triggered it and the gate's results."""

    iteration: SkillIteration
    diff: str
    bug_title: str | None = None
    bug_status: str | None = None
    root_cause_detail: str | None = None


def blamed_skill(bug: Bug) -> str:
    return bug.skill_role or DEFAULT_SKILL_ROLE


def fold(events: Iterable[SkillIterationEvent]) -> dict[str, SkillIteration]:
    out: dict[str, SkillIteration] = {}
    for ev in events:
        it = out.get(ev.iteration_id)
        if it is None:
            fields = {k: getattr(ev, k) for k in _SET_ON_PROPOSE}
            it = out[ev.iteration_id] = SkillIteration(
                iteration_id=ev.iteration_id, status=ev.status, created_at=ev.ts, updated_at=ev.ts,
                **{k: v if v is not None else "" for k, v in fields.items() if k != "task_id"}, task_id=ev.task_id,
            )  # fmt: skip
        it.status, it.updated_at = ev.status, ev.ts
        if ev.gate is not None:
            it.gate = ev.gate
        if ev.revert_commit is not None:
            it.revert_commit = ev.revert_commit
        it.history.append(f"{ev.ts:%Y-%m-%d %H:%M:%S} {ev.status} by {ev.by}" + (f": {ev.note}" if ev.note else ""))
    return out


class SkillIterations:
    """The iterations of one project: propose, gate, apply / reject, roll back, and read them."""

    def __init__(self, state_dir: Path, ledger) -> None:
        self.repo = SkillRepo(state_dir)
        self.ledger = ledger

    # -- read ------------------------------------------------------------------------------------
    def all(self) -> dict[str, SkillIteration]:
        return fold(self.ledger.read_as("skill_iteration", SkillIterationEvent))

    def get(self, iteration_id: str) -> SkillIteration:
        found = self.all().get(iteration_id)
        if found is None:
            raise GraphLemonError(
                ErrorCode.ITERATION_NOT_FOUND, f"no skill iteration {iteration_id!r} in this project",
                iteration_id=iteration_id,
            )  # fmt: skip
        return found

    def list(self, skill: str | None = None) -> list[SkillIteration]:
        if skill is not None and skill not in ROLES:
            raise invalid_param(f"unknown role {skill!r}; choose one of: {', '.join(ROLES)}")
        items = [it for it in self.all().values() if skill is None or it.skill == skill]
        return sorted(items, key=lambda it: it.created_at)

    def detail(self, iteration_id: str) -> IterationDetail:
        it = self.get(iteration_id)
        diff = self.repo.diff(it.parent_commit, it.commit) if self.repo.has_commit(it.commit) else ""
        bug = BugTracker(self.ledger).all().get(it.triggered_by_bug_id)
        return IterationDetail(
            iteration=it, diff=diff, bug_title=bug.title if bug else None, bug_status=bug.status if bug else None,
            root_cause_detail=bug.root_cause_detail if bug else None,
        )  # fmt: skip

    # -- write -----------------------------------------------------------------------------------
    def check_trigger(self, skill: str, bug_id: str | None) -> Bug:
        """The bug that may trigger a change of `skill`'s skill, or the refusal (nothing is written)."""
        if skill not in ROLES:
            raise invalid_param(f"unknown role {skill!r}; choose one of: {', '.join(ROLES)}")
        if not bug_id or not bug_id.strip():
            raise invalid_param("a skill change needs the bug that triggered it (triggered_by_bug_id / --bug BUG_ID)")
        bug = BugTracker(self.ledger).get(bug_id)
        if bug.root_cause_category != "skill_defect":
            raise invalid_param(
                f"bug {bug_id} is attributed to {bug.root_cause_category or 'nothing yet'}, not to a skill defect; "
                "only a skill_defect bug can change a skill",
                bug_id=bug_id,
            )
        if blamed_skill(bug) != skill:
            raise invalid_param(
                f"bug {bug_id} is attributed to the {blamed_skill(bug)} skill, not the {skill} skill", bug_id=bug_id
            )
        self._check_bug_budget(skill, bug)
        return bug

    def _check_bug_budget(self, skill: str, bug: Bug) -> None:
        """One bug drives one standing change of a skill (applied, or still being gated: roll it back to try
        another) and at most `MAX_ITERATIONS_PER_BUG` iterations in all."""
        mine = [it for it in self.list(skill) if it.triggered_by_bug_id == bug.bug_id]
        standing = [f"{it.iteration_id} ({it.status})" for it in mine if it.status in ("proposed", "gating", "applied")]
        if standing:
            raise GraphLemonError(
                ErrorCode.INVALID_TRANSITION,
                f"bug {bug.bug_id} already drives a change of the {skill} skill: {', '.join(standing)}; one bug "
                "drives one standing change (roll it back first to try another)",
                bug_id=bug.bug_id,
            )
        if len(mine) >= MAX_ITERATIONS_PER_BUG:
            raise GraphLemonError(
                ErrorCode.INVALID_TRANSITION,
                f"bug {bug.bug_id} already drove {len(mine)} iterations of the {skill} skill "
                f"({', '.join(it.iteration_id for it in mine)}), the most one bug may drive; a person judges the "
                "skill from here",
                bug_id=bug.bug_id,
            )

    def propose(
        self, skill: str, bug_id: str | None, text: str, *, author: str, rationale: str, task_id: str | None = None
    ) -> SkillIteration:
        """Commit the new text as a proposal (one commit naming the iteration and the bug)."""
        bug = self.check_trigger(skill, bug_id)
        if not text.strip():
            raise invalid_param(f"the new {skill} skill is empty")
        if not rationale.strip():
            raise invalid_param("a skill change needs a rationale")
        self.repo.ensure(self.ledger)
        iteration_id = f"si-{utcnow():%Y%m%d%H%M%S}-{secrets.token_hex(2)}"
        message = f"{iteration_id}: {skill} skill (bug {bug.bug_id})\n\n{rationale.strip()}\n\nauthor: {author}\n"
        with self.repo.lock():
            parent, commit = self.repo.commit_text(skill, text, message)
            stat = self.repo.diff_stat(parent, commit)
            self.ledger.append(
                SkillIterationEvent(
                    iteration_id=iteration_id, status="proposed", by=author, skill=skill, parent_commit=parent,  # type: ignore[arg-type]
                    commit=commit, triggered_by_bug_id=bug.bug_id, task_id=task_id or bug.task_id, author=author,
                    rationale=rationale.strip(), diff_stat=stat,
                )
            )  # fmt: skip
        return self.get(iteration_id)

    def start_gate(self, iteration_id: str) -> SkillIteration:
        return self._move(iteration_id, "gating", by="gate")

    def apply(self, iteration_id: str, gate: SkillGateResult) -> SkillIteration:
        return self._move(iteration_id, "applied", by="gate", gate=gate, note=gate.note or "the gate passed")

    def reject(self, iteration_id: str, gate: SkillGateResult) -> SkillIteration:
        """The gate failed: revert the iteration's commit (a new commit) and record why."""
        it = self.get(iteration_id)
        lifecycle.check("skill_iteration", it.status, "rejected")
        with self.repo.lock():
            revert = self._revert(it, f"revert {iteration_id}: rejected by the regression gate\n\n{gate.note}\n")
            self._append(it, "rejected", by="gate", gate=gate, revert_commit=revert, note=gate.note)
        return self.get(iteration_id)

    def rollback(self, iteration_id: str, *, by: str = "human") -> SkillIteration:
        """Revert an applied iteration as a new commit. Refused while a later applied iteration of the same
        skill stands on it (roll that back first)."""
        it = self.get(iteration_id)
        if it.status != "applied":
            raise GraphLemonError(
                ErrorCode.INVALID_TRANSITION,
                f"iteration {iteration_id} is {it.status}; only an applied iteration can be rolled back",
                iteration_id=iteration_id,
            )
        later = [o.iteration_id for o in self.list(it.skill) if o.created_at > it.created_at and o.status == "applied"]
        if later:
            raise GraphLemonError(
                ErrorCode.INVALID_TRANSITION,
                f"later applied iteration(s) of the {it.skill} skill build on {iteration_id}: {', '.join(later)}; "
                "roll them back first (newest first)",
                iteration_id=iteration_id,
                later=later,
            )
        with self.repo.lock():
            revert = self._revert(it, f"rollback {iteration_id}: {it.skill} skill (bug {it.triggered_by_bug_id})\n")
            moved = repin_reverted(self.repo, self.ledger, it.commit, revert, iteration_id)
            note = f"reverted by {revert[:12]}" + (f"; task(s) pinned to it now: {', '.join(moved)}" if moved else "")
            self._append(it, "rolled_back", by=by, revert_commit=revert, note=note)
        return self.get(iteration_id)

    # -- internals -------------------------------------------------------------------------------
    def _revert(self, it: SkillIteration, message: str) -> str:
        try:
            return self.repo.revert(it.commit, message)
        except GraphLemonError:
            self.repo.git("reset", "--hard", "--quiet", "HEAD", check=False)  # leave no half-made revert behind
            raise

    def _move(self, iteration_id: str, to: SkillIterationStatus, *, by: str, **fields) -> SkillIteration:
        it = self.get(iteration_id)
        lifecycle.check("skill_iteration", it.status, to)
        self._append(it, to, by=by, **fields)
        return self.get(iteration_id)

    def _append(self, it: SkillIteration, to: SkillIterationStatus, *, by: str, **fields) -> None:
        self.ledger.append(
            SkillIterationEvent(iteration_id=it.iteration_id, status=to, from_status=it.status, by=by, **fields)
        )


def skill_log(state_dir: Path, ledger, skill: str | None = None) -> list[SkillIteration]:
    """The audit log (oldest first): what `graphlemon skills log` and the console show."""
    return SkillIterations(state_dir, ledger).list(skill)


def iteration_detail(state_dir: Path, ledger, iteration_id: str) -> IterationDetail:
    """One iteration with its diff, bug and gate results (`graphlemon skills show`, the console)."""
    return SkillIterations(state_dir, ledger).detail(iteration_id)


def evidence_section(state_dir: Path, ledger, task_id: str) -> list[str]:
    """Markdown lines for a blocked task's evidence pack: its latest rejected iteration, both skill versions and
    the gate's results."""
    rejected = [it for it in SkillIterations(state_dir, ledger).list() if it.task_id == task_id]
    rejected = [it for it in rejected if it.status == "rejected"]
    if not rejected:
        return []
    it = rejected[-1]
    repo = SkillRepo(state_dir)
    gate = it.gate or SkillGateResult(ok=False)
    lines = [
        "",
        f"## Skill iteration {it.iteration_id} ({it.skill}) rejected by the regression gate",
        f"- triggered by bug `{it.triggered_by_bug_id}`, author {it.author}: {it.rationale}",
        f"- gate: replayed {gate.replayed_node or '-'}; bug test `{gate.bug_test or '-'}` "
        f"{'passed' if gate.bug_test_passed else 'still failing'}; newly red units: {', '.join(gate.newly_red) or 'none'}",
        f"- failing before: {', '.join(gate.failed_before) or 'none'}; failing after: {', '.join(gate.failed_after) or 'none'}",
        f"- {gate.note}" if gate.note else "",
        f"- reverted by commit {it.revert_commit[:12] if it.revert_commit else '-'}",
    ]
    for label, commit in (("old", it.parent_commit), ("proposed", it.commit)):
        text = repo.text_at(it.skill, commit) if repo.has_commit(commit) else "(commit missing)"
        lines += ["", f"### {label} {it.skill} skill ({commit[:12]})", "", "```markdown", text.rstrip(), "```"]
    return [line for line in lines if line is not None]
