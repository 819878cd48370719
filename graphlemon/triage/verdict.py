"""What a triage produces: the verdict (triage.json's fields, docs/triage.md) and the TriagerOutput."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..models import ExecutorName, SddPatch, TriageCategory

AUTO_APPLY_MIN_CONFIDENCE = 0.8
AUTO_APPLY_CATEGORIES = frozenset({"contract_mismatch", "impl_bug", "infra_flake"})
FALLBACK_CONFIDENCE = 0.3
TodoStatus = Literal["pending", "in_progress", "done", "skipped"]
# how the verdict was reached: the bug-triager agent (rules as its tools), or the rules alone (offline)
TriageMethod = Literal["agent", "rules"]


class TriageVerdict(BaseModel):
    """A proposed triage.json: what the bug-triager role (or the deterministic triager) must produce."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    root_cause: str = Field(description="one sentence: the unit, the concrete behaviour, expected vs actual")
    category: TriageCategory
    affected_units: list[str] = Field(default_factory=list, description="units that must be reset and rewritten")
    proposed_sdd_patch: SddPatch | None = Field(default=None, description="required for contract_mismatch, else null")
    confidence: float = Field(ge=0, le=1)
    evidence: list[str] = Field(
        default_factory=list, description='"path: quote" or "path:line: quote", each verifiable'
    )
    l3_question: str | None = Field(default=None, description="for spec_ambiguous: the question a person must answer")


class TodoItem(BaseModel):
    """One step of the triager's workflow (step-001 .. step-005: read, compare, classify, check, write)."""

    model_config = ConfigDict(extra="ignore")

    id: str = ""
    title: str
    status: TodoStatus = "pending"


class Violation(BaseModel):
    """A failed self-check item (one of the self-check's ten items)."""

    item: int = Field(ge=1, le=10)
    check: str
    detail: str


class TriagerOutput(BaseModel):
    """The triager's output. `ok` is False only when the triage itself is defective (the fallback)."""

    ok: bool
    run_id: str
    triage_ref: str
    category: TriageCategory
    confidence: float
    affected_units: list[str]
    will_auto_apply: bool
    evidence_verified: bool
    duration_ms: int
    tokens_used: int
    executor: ExecutorName = "none"
    fallback: bool = False
    method: TriageMethod = "rules"


def will_auto_apply(category: str, confidence: float, evidence_verified: bool, fallback: bool) -> bool:
    """True when the LoopController may act without a person: confidence ≥ 0.8, a category it can act on, verified evidence."""
    return (
        not fallback
        and evidence_verified
        and confidence >= AUTO_APPLY_MIN_CONFIDENCE
        and category in AUTO_APPLY_CATEGORIES
    )
