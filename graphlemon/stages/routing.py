"""Where the loop goes next: every routing decision of the DevLoop as a pure function over records.

No I/O here: the loops (graphlemon/devloop/) and the stages read the ledger, calls these, and acts. Each
function is a table (tests/devloop/test_routing.py covers every row):

* `triage_action` — a BugTriager verdict → the L2 action (docs/triage.md: infra_flake →
  rerun, contract_mismatch auto-applied → patch the SDD, impl_bug → reset the units,
  spec_ambiguous or an unconfident verdict → a human);
* `after_integration` — an L2 attempt's outcome → pass / act and try again / block;
* `root_cause_route` — one bug's root cause → its suggested route (core_engine: the Coder in GraphLemon's own
  repository, a person anywhere else; REQ-15);
* `validator_route` — the validator's attributions → fast_lane / full_replan / skill_update / escalate
  (REQ-04 / REQ-05: coder → Coder, planning → Planner, REQ-08: skill_defect → the
  SkillEditor, anything else → a human);
* `stuck_bugs` — the same bug attributed in N rounds in a row → not converging (REQ-05);
* `after_validation` — a validator outcome × round × history → done / next round / skill update / block;
* `after_skill_update` — a skill iteration's gate → the next round with the new skill, or a block (REQ-08);
* `after_human` — a person resumed a block → what the next round does (REQ-09).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from ..models import BlockedReason, RootCauseCategory, TriageCategory
from .outcomes import (
    Attribution,
    IntegrationAction,
    IntegrationOutcome,
    Route,
    SkillUpdateOutcome,
    ValidationOutcome,
)

ROOT_CAUSE_ROUTES: dict[str, Route] = {
    "coder": "fast_lane",
    "planning": "full_replan",
    "skill_defect": "skill_update",  # the SkillEditor proposes, the regression gate decides (REQ-08)
    "inconclusive_escalate": "escalate",
    "core_engine": "escalate",
}
# GraphLemon developing its own repository (a self-hosted project): a core_engine bug is code of this very
# repository, so the Coder fixes it like any coder bug; the deploy supervisor then ships the merge (REQ-15)
SELF_HOSTED_ROUTES: dict[str, Route] = {**ROOT_CAUSE_ROUTES, "core_engine": "fast_lane"}
INFRA_RERUNS = 1  # an infra_flake verdict reruns the integration once; the same again needs a person


class RoundPlan(BaseModel):
    """What a round does: re-plan or not, which units to code, with what feedback."""

    loop_round: int = 0
    need_plan: bool = True
    units: list[str] | None = None  # None: every unit
    feedback: dict[str, str] = Field(default_factory=dict)
    plan_feedback: str | None = None


class Step(BaseModel):
    """The loop's next move: finish, run `plan` (with a `routed` summary), or block for a person."""

    action: Literal["done", "next_round", "skill_update", "block"]
    plan: RoundPlan | None = None
    summary: str = ""
    reason: BlockedReason | None = None


class L2Step(BaseModel):
    """After one integration attempt: pass, act on the verdict (`patch_sdd` / `reset_units` / `rerun`), or block."""

    action: Literal["pass", "patch_sdd", "reset_units", "rerun", "block"]
    reason: BlockedReason | None = None
    note: str = ""


def triage_action(category: TriageCategory, will_auto_apply: bool) -> IntegrationAction:
    """A verdict → what L2 does with it. Only a confident verdict (`will_auto_apply`) changes code or the SDD."""
    if category == "infra_flake":
        return "rerun"
    if category == "spec_ambiguous" or not will_auto_apply:
        return "escalate"
    return "patch_sdd" if category == "contract_mismatch" else "reset_units"


def after_integration(result: IntegrationOutcome, attempt: int, max_attempts: int, reruns: int) -> L2Step:
    """One L2 attempt's outcome → the next move; `reruns` counts the infra reruns already made in this round."""
    if result.action == "pass":
        return L2Step(action="pass")
    if result.action == "escalate":
        reason = "spec_ambiguous" if result.category == "spec_ambiguous" else "low_confidence_triage"
        return L2Step(
            action="block",
            reason=reason,
            note=f"triage {result.category} (confidence {result.confidence}): {result.root_cause}",
        )
    if result.action == "rerun" and reruns >= INFRA_RERUNS:
        return L2Step(
            action="block",
            reason="not_converging",
            note=f"the integration run failed for infrastructure reasons again after {reruns} rerun(s): "
            f"{result.root_cause}",
        )
    if attempt >= max_attempts:
        return L2Step(
            action="block", reason="not_converging", note=f"integration still failing after {max_attempts} attempts"
        )
    return L2Step(action=result.action)  # type: ignore[arg-type]


def root_cause_route(category: RootCauseCategory, self_hosted: bool) -> Route:
    """A root cause → the route its bug suggests. core_engine is a defect of GraphLemon itself: outside GraphLemon's
    own repository it is not the project's code and a person takes it; in it, the Coder fixes it."""
    return (SELF_HOSTED_ROUTES if self_hosted else ROOT_CAUSE_ROUTES)[category]


def validator_route(attributions: list[Attribution]) -> tuple[Route, BlockedReason | None]:
    """A bug that needs a person escalates the round; else a skill defect changes the skill (REQ-08); else any
    planning bug re-plans; else the coder fixes."""
    routes = {a.suggested_route for a in attributions}
    if "escalate" in routes or not attributions:
        return "escalate", "validator_inconclusive"
    if "skill_update" in routes:
        return "skill_update", None
    if "full_replan" in routes:
        return "full_replan", None
    return "fast_lane", None


def stuck_bugs(attributed_per_round: list[set[str]], limit: int) -> list[str]:
    """Bugs attributed in each of the last `limit` rounds (REQ-05: the same bug that long is not converging)."""
    if limit < 1 or len(attributed_per_round) < limit:
        return []
    return sorted(set.intersection(*attributed_per_round[-limit:]))


def after_validation(
    result: ValidationOutcome, loop_round: int, max_rounds: int, stuck: list[str], stuck_rounds: int = 3
) -> Step:
    """A validator outcome → done, the next round (fast lane or re-plan), or a block with its reason."""
    if result.ok:
        return Step(action="done", summary=f"validated in round {loop_round}")
    if stuck:
        return Step(
            action="block",
            reason="not_converging",
            summary=f"the same bug for {stuck_rounds} rounds in a row: {', '.join(stuck[:5])}",
        )
    if result.route == "skill_update":
        bugs = [a.bug_id for a in result.attributions if a.root_cause_category == "skill_defect"]
        return Step(action="skill_update", summary=f"skill_defect ({', '.join(bugs)}) -> skill update")
    if result.route == "escalate":
        return Step(
            action="block", reason=result.blocked_reason or "validator_inconclusive", summary=_attribution_note(result)
        )
    if loop_round + 1 >= max_rounds:
        return Step(action="block", reason="not_converging", summary=_rounds_spent(loop_round, max_rounds))
    replan = result.route == "full_replan"
    plan = RoundPlan(
        loop_round=loop_round + 1,
        need_plan=replan,
        units=None if replan else result.units_to_fix,
        feedback={} if replan else result.feedback,
        plan_feedback="\n".join(a.root_cause_detail for a in result.attributions) if replan else None,
    )
    units = f" ({', '.join(plan.units)})" if plan.units else ""
    return Step(action="next_round", plan=plan, summary=f"{result.route} -> round {loop_round + 1}{units}")


def after_skill_update(update: SkillUpdateOutcome, result: ValidationOutcome, loop_round: int, max_rounds: int) -> Step:
    """The gate applied the new skill → the next round recodes every attributed unit with it (re-planning if a
    planning bug came with it); the gate rejected it → a person decides, with both versions in the evidence."""
    if not update.ok:
        return Step(action="block", reason="skill_defect", summary=f"skill update for {update.bug_id}: {update.note}")
    if loop_round + 1 >= max_rounds:
        return Step(action="block", reason="not_converging", summary=_rounds_spent(loop_round, max_rounds))
    replan = any(a.root_cause_category == "planning" for a in result.attributions)
    units = sorted({a.unit_id for a in result.attributions if a.unit_id})
    plan = RoundPlan(
        loop_round=loop_round + 1,
        need_plan=replan,
        units=None if replan or not units else units,
        feedback={} if replan else {u: result.feedback[u] for u in units if u in result.feedback},
        plan_feedback="\n".join(a.root_cause_detail for a in result.attributions) if replan else None,
    )
    summary = f"skill {update.skill} updated ({update.iteration_id}) -> round {loop_round + 1}"
    return Step(action="next_round", plan=plan, summary=summary + (f" ({', '.join(units)})" if units else ""))


def after_human(
    reason: BlockedReason,
    block_note: str,
    human_note: str,
    loop_round: int,
    active_units: list[str],
    all_units: list[str],
) -> Step:
    """A person resumed a block: a plan problem re-plans with their note; anything else codes the units still red."""
    nxt = loop_round + 1
    if reason == "plan_inconsistent":
        plan = RoundPlan(loop_round=nxt, need_plan=True, plan_feedback=human_note or block_note)
        return Step(action="next_round", plan=plan, summary=f"human resume -> round {nxt} (re-plan)")
    units = active_units or all_units
    text = f"A human resumed the task after: {block_note}" + (f"\nTheir note: {human_note}" if human_note else "")
    plan = RoundPlan(loop_round=nxt, need_plan=False, units=units, feedback=dict.fromkeys(units, text))
    return Step(action="next_round", plan=plan, summary=f"human resume -> round {nxt} ({', '.join(units)})")


def _attribution_note(result: ValidationOutcome) -> str:
    parts = [f"{a.bug_id}: {a.root_cause_category} — {a.root_cause_detail}" for a in result.attributions[:5]]
    return "validator: " + ("; ".join(parts) or "no attribution")


def _rounds_spent(loop_round: int, max_rounds: int) -> str:
    """The rounds this task ran (a resumed task may run past the limit: the evidence pack's "Rounds so far")."""
    done = loop_round + 1
    return f"still failing after {done} round{'s' if done != 1 else ''} (the limit is {max_rounds})"
