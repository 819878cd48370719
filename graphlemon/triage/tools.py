"""The triager's tools as plain functions (the agent path registers them as agent tools).

diff_contract_vs_impl(project, unit_id) -> ContractDiff        {matches, divergences[]}
category_classifier(project, run_id) -> ClassifierHint         {category, confidence, hints}
similar_bugs(project, signature, ...) -> list[Bug]             find_similar_bug on bugs.ndjson
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from ..bugs import Bug, BugTracker
from ..errors import ErrorCode, GraphLemonError
from ..models import TriageCategory
from ..project import STATE_DIR, ProjectHandle
from ..units import Contract, UnitsFile
from .codescan import ContractDiff, diff_sources
from .history import find_similar_bug
from .run_context import load_run, read_code, read_model


class ClassifierHint(BaseModel):
    """category_classifier's answer: a first opinion the agent must review."""

    category: TriageCategory
    confidence: float
    affected_units: list[str] = Field(default_factory=list)
    rule: str
    root_cause: str
    hints: list[str] = Field(default_factory=list)


def diff_contract_vs_impl(project: ProjectHandle, unit_id: str) -> ContractDiff:
    """Routes and status codes in the unit's code vs its contract.json (FastAPI, Flask, Express)."""
    root = project.root
    units = read_model(root / STATE_DIR / "units.json", UnitsFile, "the project has no .graphlemon/units.json")
    entry = units.get(unit_id)
    if entry is None:
        raise GraphLemonError(ErrorCode.UNIT_NOT_FOUND, f"unit {unit_id!r} is not in units.json", unit_id=unit_id)
    contract_path = root / STATE_DIR / "units" / unit_id / "contract.json"
    contract = read_model(contract_path, Contract, "") if contract_path.is_file() else None
    return diff_sources(unit_id, read_code(root.resolve(), entry.code, []), contract, entry.framework)


def category_classifier(project: ProjectHandle, run_id: str) -> ClassifierHint:
    from .rule_classifier import classify

    finding = classify(load_run(project, run_id))
    return ClassifierHint(
        category=finding.category,
        confidence=finding.confidence,
        affected_units=finding.affected,
        rule=finding.rule,
        root_cause=finding.root_cause,
        hints=finding.hints,
    )


def similar_bugs(
    project: ProjectHandle, signature: str, *, unit_ids: list[str] | None = None, text: str = ""
) -> list[Bug]:
    bugs = list(BugTracker(project.ledger).all().values())
    return find_similar_bug(bugs, signature, unit_ids=unit_ids, text=text)
