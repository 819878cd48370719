"""The rules' facts as tools of the bug-triager agent (it reviews them; they do not decide).

Each tool is described once, where `_register` registers it (the description the model reads); `AGENT_TOOLS` names
them in the order the role offers them.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

from ..agents.tool_context import ToolContext
from ..agents.tools.registry import REGISTRY, tool
from ..bugs import Bug, BugTracker
from ..errors import ErrorCode, GraphLemonError
from ..models import TriageCategory
from ..project import STATE_DIR, ProjectHandle
from ..units import Contract, UnitsFile
from .codescan import ContractDiff, diff_sources
from .decider import KEPT, admissible, classify
from .environment_signals import environment_signals, unit_ports
from .evidence_check import verify_all
from .findings import Element
from .history import find_similar_bug
from .interface_diff import compare
from .interface_sides import Interfaces
from .mechanisms import findings_of
from .run_context import load_run, read_code, read_model, runs_dir
from .sdd_element import other_statements
from .steps import step_calls
from .voice import stack_frames, unit_of_path

_RUN_IN_PATH = re.compile(r"integration/runs/([A-Za-z0-9._-]+)/")
_ITEM_LINE = re.compile(r"^([^:\n]+?):(\d+): ")
AGENT_TOOLS = [
    "verify_evidence", "triage_findings", "find_sdd_clause", "scan_signals", "locate_handler", "read_assertion",
    "compare_interfaces", "category_classifier", "diff_contract_vs_impl", "find_similar_bug",
]  # fmt: skip
MAX_STATEMENTS = 12


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


def verify_evidence(project: ProjectHandle, evidence: list[str]) -> dict:
    report = verify_all(project.root, evidence)
    return {
        "ok": report.ok,
        "results": [r.model_dump(include={"evidence", "ok", "reason", "hit_file", "line"}) for r in report.results],
    }


def triage_findings(project: ProjectHandle, run_id: str) -> dict:
    ctx = load_run(project, run_id)
    found = findings_of(ctx, ctx.result.failures[0])
    return {
        "findings": [
            {
                **f.as_fact(),
                "kept": admissible(f, frozenset()),
                "unseen_precision": f"{KEPT[f.rule].right}/{KEPT[f.rule].fired}" if f.rule in KEPT else None,
            }
            for f in found
        ],  # fmt: skip
        "note": "kept: the decider would decide with it; a finding in a unit's own voice is evidence about that unit",
    }


def find_sdd_clause(project: ProjectHandle, run_id: str, method: str, path: str) -> dict:
    ctx = load_run(project, run_id)
    blocks = other_statements([(d.rel, d.text) for d in ctx.sdd_docs], Element("", method, path), ctx.units.ids())
    return {"statements": [{"at": f"{b.rel}:{b.first}", "under": b.heading, "says": b.text.strip()[:300]}
                           for b in blocks[:MAX_STATEMENTS]]}  # fmt: skip


def scan_signals(project: ProjectHandle, run_id: str) -> dict:
    ctx = load_run(project, run_id)
    signals = environment_signals(ctx, ctx.result.failures[0])
    return {
        "environment": [{"kind": s.kind, **s.said.as_dict()} for s in signals[:20]],
        "unit_ports": {str(p): u for p, u in sorted(unit_ports(ctx).items())},
    }


def locate_handler(project: ProjectHandle, unit_id: str, method: str, path: str) -> dict:
    diff = diff_contract_vs_impl(project, unit_id)
    route = diff.route(method, path)
    if route is None:
        return {"found": False, "framework": diff.framework, "routes": [f"{r.method} {r.path}" for r in diff.routes]}
    return {
        "found": True,
        "framework": diff.framework,
        "handler": f"{route.file}:{route.line}",
        "statuses": {str(s): f"{route.file}:{line}" for s, line in sorted(route.statuses.items())},
        "raises_at": f"{route.file}:{route.throws_at}" if route.throws_at else None,
    }


def compare_interfaces(project: ProjectHandle, run_id: str) -> dict:
    """What every side says about the failing step's endpoints, and where two sides disagree (typed findings)."""
    ctx = load_run(project, run_id)
    failure = ctx.result.failures[0]
    calls = step_calls(ctx, failure)
    ifs = Interfaces(ctx)
    sides: dict[str, dict[str, list[str]]] = {}
    for call in calls:
        if call.path is None:
            continue
        key = f"{call.method} {call.path}" + (f" (served by {call.provider})" if call.provider else "")
        found = {
            side: ifs.of(side, call.provider, call.method, call.path)
            for side in ("spec", "contract", "consumer", "code")
        }
        sides[key] = {side: [f"{op.signature()} [{op.at.rel}:{op.at.line}]" for op in ops[:4]]
                      for side, ops in found.items() if ops}  # fmt: skip
    return {"interface": sides, "findings": [f.as_dict() for f in compare(ctx, failure, calls)]}


def evidence_findings(project: ProjectHandle, evidence: list[str]) -> dict:
    """For evidence items that cite a line: the typed interface findings that line takes part in (of the runs the
    evidence names, else the latest runs), so each item says what it shows, not only that its quote exists."""
    runs = sorted({m.group(1) for item in evidence if (m := _RUN_IN_PATH.search(item))}) or _latest_runs(project)
    findings = []
    for run_id in runs[:3]:
        try:
            findings += compare_interfaces(project, run_id)["findings"]
        except GraphLemonError:
            continue
    shows: dict[str, list[str]] = {}
    for item in evidence:
        at = _cited_line(item)
        hits = [f["shows"] for f in findings if at and at in (f["a"]["at"], f["b"]["at"])]
        if hits:
            shows[item] = hits
    return {"findings": findings, "shows": shows}


def _latest_runs(project: ProjectHandle, keep: int = 3) -> list[str]:
    runs = runs_dir(project.state_dir)
    found = [d for d in runs.iterdir() if (d / "result.json").is_file()] if runs.is_dir() else []
    return [d.name for d in sorted(found, key=lambda d: d.stat().st_mtime, reverse=True)[:keep]]


def _cited_line(item: str) -> str | None:
    """`path:line` of an evidence item "path:line: quote", None without a line number."""
    m = _ITEM_LINE.match(item.strip())
    return f"{m.group(1)}:{m.group(2)}" if m else None


def read_assertion(project: ProjectHandle, run_id: str) -> dict:
    ctx = load_run(project, run_id)
    f = ctx.result.failures[0]
    frames = []
    for p, n in stack_frames(f.stack or ""):
        hit = unit_of_path(ctx, p)
        frames.append({"frame": f"{p}:{n}", "unit_id": hit[0] if hit else None, "file": hit[1] if hit else None})
    return {
        "case": f.case,
        "step": f.step,
        "description": f.description,
        "expected": f.expected.model_dump(mode="json", exclude_none=True),
        "got": f.got.model_dump(mode="json", exclude_none=True),
        "message": (f.message or "")[:1000],
        "own_frames": [x for x in frames if x["unit_id"]],
    }


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _EvidenceArgs(_Args):
    evidence: list[str] = Field(description='items "path: quote" or "path:line: quote", project-relative')


class _RunArgs(_Args):
    run_id: str


class _EndpointArgs(_Args):
    run_id: str
    method: str = Field(description="GET, POST, ...")
    path: str = Field(description="the endpoint's path, e.g. /api/orders/{id} or /api/orders/42")


class _HandlerArgs(_Args):
    unit_id: str
    method: str
    path: str


class _UnitArgs(_Args):
    unit_id: str


class _SimilarArgs(_Args):
    signature: str = Field(description="a failure signature (sig-...), from the triage context or bugs.ndjson")
    unit_ids: list[str] = Field(default_factory=list)
    text: str = Field(default="", description="words of the failure, to find bugs of the same units that read alike")


def _register() -> None:
    if "verify_evidence" in REGISTRY:
        return

    @tool("category_classifier", "A first opinion on the run's category (the deterministic triager); review it yourself.")  # fmt: skip
    def _classifier(ctx: ToolContext, args: _RunArgs) -> dict:
        return category_classifier(ctx.project, args.run_id).model_dump()

    @tool("diff_contract_vs_impl", "Routes and status codes in a unit's code vs its contract.json: {matches, divergences}.")  # fmt: skip
    def _diff(ctx: ToolContext, args: _UnitArgs) -> dict:
        return diff_contract_vs_impl(ctx.project, args.unit_id).model_dump(exclude={"routes"})

    @tool("find_similar_bug", "Earlier bugs with this failure signature, or of the same units and reading alike.")
    def _similar(ctx: ToolContext, args: _SimilarArgs) -> dict:
        bugs = similar_bugs(ctx.project, args.signature, unit_ids=args.unit_ids, text=args.text)
        keep = {"bug_id", "status", "category", "title", "unit_id", "run_id", "signature"}
        return {"bugs": [b.model_dump(mode="json", include=keep) for b in bugs[:10]]}

    @tool("verify_evidence", "Check evidence items against the project files before you cite them: {ok, results[]}.")
    def _verify(ctx: ToolContext, args: _EvidenceArgs) -> dict:
        return verify_evidence(ctx.project, args.evidence)

    @tool(
        "triage_findings",
        "Every mechanism's typed findings about the run: what it points to, its quotes with their voices (unit, "
        "runner, os, service, fixture, sdd) and times, the sides that confirm it, and whether the decider keeps it.",
    )
    def _findings(ctx: ToolContext, args: _RunArgs) -> dict:
        return triage_findings(ctx.project, args.run_id)

    @tool("find_sdd_clause", "The SDD statements that name an endpoint, wherever they are (sections, tables, changelogs).")  # fmt: skip
    def _clauses(ctx: ToolContext, args: _EndpointArgs) -> dict:
        return find_sdd_clause(ctx.project, args.run_id, args.method.upper(), args.path)

    @tool("scan_signals", "Environment signals in every voice (who said it, when it was said), and the units' ports.")
    def _signals(ctx: ToolContext, args: _RunArgs) -> dict:
        return scan_signals(ctx.project, args.run_id)

    @tool("locate_handler", "The route handler a parser finds in a unit's code, and the statuses it can produce.")
    def _handler(ctx: ToolContext, args: _HandlerArgs) -> dict:
        try:
            return locate_handler(ctx.project, args.unit_id, args.method.upper(), args.path)
        except GraphLemonError as exc:
            if exc.code is ErrorCode.UNIT_NOT_FOUND:
                return {"found": False, "error": exc.message}
            raise

    @tool(
        "compare_interfaces",
        "The failing step's endpoints as the SDD, the contracts, the code and the trace state them, and the typed "
        "disagreements between them (path_differs, field_missing, status_differs, limit_violated), each with the "
        "two lines that disagree.",
    )
    def _interfaces(ctx: ToolContext, args: _RunArgs) -> dict:
        return compare_interfaces(ctx.project, args.run_id)

    @tool("read_assertion", "The failing step's assertion: expected vs got, the message, and stack frames in units' code.")  # fmt: skip
    def _assertion(ctx: ToolContext, args: _RunArgs) -> dict:
        return read_assertion(ctx.project, args.run_id)


_register()
