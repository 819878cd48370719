"""What each DevLoop stage returns: small pydantic models that cross the stage boundary
(and Prefect's result storage)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..models import (
    BlockedReason,
    RootCauseCategory,
    SddPatch,
    SkillGateResult,
    SkillIterationStatus,
    Stage,
    SuggestedRoute,
    TriageCategory,
)

Route = Literal["done", "fast_lane", "full_replan", "skill_update", "escalate"]
# "triage": the run failed and the BugTriager has not judged it yet (the integrator's own result)
IntegrationAction = Literal["pass", "triage", "patch_sdd", "reset_units", "rerun", "escalate"]


class _Outcome(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Noted(_Outcome):
    """A step of the loop whose result is a line of the task's story (a routing decision, an SDD patch applied)."""

    summary: str


class PlanOutcome(_Outcome):
    ok: bool
    attempts: int = 1
    artifact_ids: dict[str, str] = Field(default_factory=dict)  # brd / prd / sdd / benchmark -> artifact_id
    unit_ids: list[str] = Field(default_factory=list)
    violations: list[str] = Field(default_factory=list)


class UnitOutcome(_Outcome):
    unit_id: str
    green: bool
    attempts: int
    last_attempt: int = 0  # the unit's attempt counter across rounds
    run_id: str | None = None
    commit: str | None = None
    open_bug_ids: list[str] = Field(default_factory=list)
    hints: list[str] = Field(default_factory=list)
    error: str | None = None


class IntegrationOutcome(_Outcome):
    ok: bool
    run_id: str
    action: IntegrationAction
    category: TriageCategory | None = None
    confidence: float | None = None
    affected_units: list[str] = Field(default_factory=list)
    sdd_patch: SddPatch | None = None
    root_cause: str | None = None
    failures: int = 0


class Attribution(_Outcome):
    """The validator's verdict on one bug (REQ-04)."""

    bug_id: str
    unit_id: str | None = None
    root_cause_category: RootCauseCategory
    root_cause_detail: str
    suggested_route: SuggestedRoute
    perspectives: dict[str, RootCauseCategory] = Field(default_factory=dict)  # spec / code / skill
    citations_verified: bool = False
    skill_role: Stage | None = None  # a skill_defect: whose skill the validator named


class ValidationOutcome(_Outcome):
    ok: bool
    run_id: str
    route: Route
    failures: int = 0
    checks_failed: list[str] = Field(default_factory=list)
    attributions: list[Attribution] = Field(default_factory=list)
    units_to_fix: list[str] = Field(default_factory=list)
    feedback: dict[str, str] = Field(default_factory=dict)  # unit_id -> root cause for the coder
    blocked_reason: BlockedReason | None = None


class SkillUpdateOutcome(_Outcome):
    """A skill_defect attribution turned into a skill iteration and its regression gate (REQ-08)."""

    ok: bool  # the iteration was applied: the task continues with the new skill
    bug_id: str
    unit_id: str | None = None
    skill: Stage | None = None
    iteration_id: str | None = None
    status: SkillIterationStatus | None = None
    commit: str | None = None
    gate: SkillGateResult | None = None
    note: str = ""
