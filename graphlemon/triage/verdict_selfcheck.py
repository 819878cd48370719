"""The triager's self-check (ten items, docs/triage.md): a list of violations, empty when the verdict may be written.

1 triage.json matches the schema            6 category and confidence fit (spec_ambiguous < 0.6)
2 root_cause has ≥ 20 characters            7 affected_units ⊆ units.json, and the right count per category
3 root_cause names a behaviour (a verb),    8 category is one of the four
  not "tests failed" / "needs fixing"       9 the todolist is all done
4 every evidence item verifies              10 no file but triage.json was written (scanSandbox)
5 proposed_sdd_patch present iff contract_mismatch
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, get_args

from pydantic import ValidationError

from ..models import TriageCategory
from .evidence_check import EvidenceReport, verify_all
from .verdict import TodoItem, TriageVerdict, Violation

MIN_ROOT_CAUSE = 20
_VERBS = (
    "return throw threw thrown raise respond answer receive write wrote written read crash refuse reject accept send "
    "sent fail exit bind bound resolve grow die kill ignore lack omit omitt declare contradict give gave store skip "
    "skipp drop dropp hang hung expect require dereference call end reset produce serve trust verify handle parse "
    "emit compute round lose lost miss treat forward redirect"
).split()
BEHAVIOUR_VERB = re.compile(
    r"\b(?:"
    + "|".join(_VERBS)
    + r")(?:s|es|ed|d|ing)?\b|\btime[sd]? ?out\b|\bran out\b|\bruns? out\b|返|抛|收|写|读|超时",
    re.IGNORECASE,
)
FILLER = re.compile(
    r"\b(?:the )?(?:integration )?(?:tests?|test case|case|step)s? (?:has |have )?(?:failed|fails|failing)\b|"
    r"\bneeds? (?:a |to be )?fix(?:ed|ing)?\b|\bhas (?:a |an )?(?:problem|bug|issue)s?\b|\bis broken\b|测试失败|需要修复|有问题",
    re.IGNORECASE,
)
CATEGORIES = get_args(TriageCategory)
SNAPSHOT_SKIP_DIRS = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".pytest_cache", ".ruff_cache"})
# written by the system around a turn, not by the agent: ledger, transcripts, todo state, memory, Prefect results
SYSTEM_WRITES = re.compile(r"^\.graphlemon/(?:[^/]+\.ndjson|logs/|agent-state/|memory/|prefect-results/)")


def triage_json_rel(run_id: str) -> str:
    return f".graphlemon/integration/runs/{run_id}/triage.json"


def self_check(
    proposal: TriageVerdict | dict[str, Any] | None,
    *,
    root: Path,
    run_id: str,
    unit_ids: list[str],
    todolist: list[TodoItem] | None,
    changed_files: list[str] = (),  # type: ignore[assignment]
    output_error: str | None = None,
) -> tuple[list[Violation], EvidenceReport | None]:
    """Check a proposed verdict; returns (violations, the evidence report if evidence could be checked)."""
    out: list[Violation] = []
    raw = proposal.model_dump() if isinstance(proposal, TriageVerdict) else (proposal or {})
    category = raw.get("category")
    if category not in CATEGORIES:
        out.append(Violation(item=8, check="category is one of the four", detail=f"category {category!r} is not one of {', '.join(CATEGORIES)}"))  # fmt: skip
    verdict = _validate(raw, output_error, out)
    report = None
    if verdict is not None and verdict.run_id != run_id:
        out.append(Violation(item=1, check="triage.json matches the schema", detail=f"run_id is {verdict.run_id!r}, this run is {run_id!r}"))  # fmt: skip
    if verdict is not None:
        out += _root_cause(verdict.root_cause)
        report = verify_all(root, verdict.evidence)
        if not verdict.evidence:
            out.append(
                Violation(
                    item=4, check="evidence verifies", detail="no evidence: at least one verifiable quote is required"
                )
            )
        for failed in report.failed:
            out.append(Violation(item=4, check="evidence verifies", detail=f"{failed.evidence[:160]!r}: {failed.reason}"))  # fmt: skip
        has_patch = verdict.proposed_sdd_patch is not None
        if has_patch != (verdict.category == "contract_mismatch"):
            want = "is required" if verdict.category == "contract_mismatch" else "must be null"
            out.append(Violation(item=5, check="category and proposed_sdd_patch agree", detail=f"proposed_sdd_patch {want} for {verdict.category}"))  # fmt: skip
        if verdict.category == "spec_ambiguous" and verdict.confidence >= 0.6:
            out.append(Violation(item=6, check="confidence fits the category", detail=f"spec_ambiguous with confidence {verdict.confidence} (must be < 0.6)"))  # fmt: skip
        out += _affected(verdict, unit_ids)
    out += _todolist(todolist)
    allowed = {triage_json_rel(run_id)}
    for path in sorted(set(changed_files) - allowed):
        out.append(Violation(item=10, check="only triage.json written", detail=f"{path} was written; the triager may write only {triage_json_rel(run_id)}"))  # fmt: skip
    return sorted(out, key=lambda v: v.item), report  # fmt: skip


def _validate(raw: dict[str, Any], output_error: str | None, out: list[Violation]) -> TriageVerdict | None:
    if output_error:
        out.append(Violation(item=1, check="triage.json matches the schema", detail=output_error))
    try:
        return TriageVerdict.model_validate(raw)
    except ValidationError as exc:
        if not output_error:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ())) or "(root)"
            out.append(Violation(item=1, check="triage.json matches the schema", detail=f"{where}: {first.get('msg')}"))
        return None


def _root_cause(text: str) -> list[Violation]:
    out = []
    stripped = " ".join(text.split())
    if len(stripped) < MIN_ROOT_CAUSE:
        out.append(Violation(item=2, check="root_cause has at least 20 characters", detail=f"{len(stripped)} characters: {stripped!r}"))  # fmt: skip
    rest = FILLER.sub(" ", stripped)
    if not BEHAVIOUR_VERB.search(rest) or len(rest.split()) < 4:
        out.append(Violation(item=3, check="root_cause names a concrete behaviour", detail=f"no behaviour (returns / throws / receives / writes / reads / times out ...) beyond filler in {stripped!r}"))  # fmt: skip
    return out  # fmt: skip


def _affected(verdict: TriageVerdict, unit_ids: list[str]) -> list[Violation]:
    out = []
    unknown = [u for u in verdict.affected_units if u not in unit_ids]
    if unknown:
        out.append(Violation(item=7, check="affected_units ⊆ units.json", detail=f"not in units.json: {', '.join(unknown)}"))  # fmt: skip
    n = len(verdict.affected_units)
    if verdict.category in ("impl_bug", "contract_mismatch") and n == 0:
        out.append(Violation(item=7, check="affected_units fit the category", detail=f"{verdict.category} must name at least one unit to reset"))  # fmt: skip
    if verdict.category in ("spec_ambiguous", "infra_flake") and n:
        out.append(Violation(item=7, check="affected_units fit the category", detail=f"{verdict.category} resets no unit; got {verdict.affected_units}"))  # fmt: skip
    return out


def _todolist(items: list[TodoItem] | None) -> list[Violation]:
    if items is None:
        return [Violation(item=9, check="todolist all done", detail="no todolist was written (write_todolist)")]
    pending = [f"{i.id or i.title}: {i.status}" for i in items if i.status not in ("done", "skipped")]
    if not items or pending:
        return [
            Violation(
                item=9, check="todolist all done", detail=f"not done: {', '.join(pending) or 'the list is empty'}"
            )
        ]
    return []


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """(size, mtime_ns) of every project file outside .git / dependencies / the ledger (for scanSandbox)."""
    out: dict[str, tuple[int, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in SNAPSHOT_SKIP_DIRS]
        for name in filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            if SYSTEM_WRITES.match(rel):
                continue
            try:
                st = path.lstat()
            except OSError:
                continue
            out[rel] = (st.st_size, st.st_mtime_ns)
    return out


def changed_since(before: dict[str, tuple[int, int]], root: Path) -> list[str]:
    after = snapshot(root)
    return sorted(rel for rel in set(before) | set(after) if before.get(rel) != after.get(rel))
