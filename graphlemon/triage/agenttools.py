"""The deterministic triage pieces as tools of the bug-triager agent (it reviews them; they do not decide).

verify_evidence(evidence[])              each "path: quote" checked against the project (extract_evidence)
find_sdd_clause(run_id, method, path)    the SDD clauses about an endpoint, best first, with file:line
scan_signals(run_id)                     environment signals, backing-service failures, start-up crashes,
                                         uncaught exceptions in a unit's own code (with file:line)
locate_handler(unit_id, method, path)    the handler a parser finds for a route, and the statuses it can produce
read_assertion(run_id)                   the failing step's assertion: expected vs got, message, stack frames
compare_interfaces(run_id)               the interface model of the step's endpoints (SDD, contracts, code, trace)
                                         and its typed disagreements, each with the two lines that disagree
                                         (declared facts too: units, enumerations, field numbers, key layouts),
                                         and the SDD statement that decides the case by its values, if one does
(plus category_classifier, diff_contract_vs_impl, find_similar_bug registered in agent.py)
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

from ..agents.tool_context import ToolContext
from ..agents.tools.registry import REGISTRY, tool
from ..errors import ErrorCode, GraphLemonError
from ..project import ProjectHandle
from .backing import backing_service_signals, unit_ports
from .decides import Decision, Statement, decide
from .evidence_check import verify_all
from .facts_diff import value_contradiction
from .interface_diff import compare, distinguishing_input, input_unspecified, unproduced
from .interface_sidecheck import header_unread, input_sides, side_checks
from .interface_sides import Interfaces
from .matching import Call, Matcher, step_calls
from .run_context import load_run, runs_dir
from .signals import infra_signals, local_module_names, stack_frames, startup_crash, unit_of_path
from .uncaught import refused_became_error, uncaught_in_provider

_RUN_IN_PATH = re.compile(r"integration/runs/([A-Za-z0-9._-]+)/")
_ITEM_LINE = re.compile(r"^([^:\n]+?):(\d+): ")
AGENT_TOOLS = [
    "verify_evidence", "find_sdd_clause", "scan_signals", "locate_handler", "read_assertion", "compare_interfaces",
]  # fmt: skip
MAX_CLAUSES = 8


def verify_evidence(project: ProjectHandle, evidence: list[str]) -> dict:
    report = verify_all(project.root, evidence)
    return {
        "ok": report.ok,
        "results": [r.model_dump(include={"evidence", "ok", "reason", "hit_file", "line"}) for r in report.results],
    }


def find_sdd_clause(project: ProjectHandle, run_id: str, method: str, path: str) -> dict:
    ctx = load_run(project, run_id)
    failure = ctx.result.failures[0]
    call = next((c for c in step_calls(ctx, failure) if c.method == method and c.path == path), None)
    if call is None:
        call = Call(method, path, None, None, None, None, None, False)
    reqs = Matcher(ctx, failure).clauses(call)[:MAX_CLAUSES]
    return {
        "clauses": [
            {
                "cite": f"{r.clause.doc}:{r.clause.line}: {r.clause.raw.strip()[:300]}",
                "statuses": [s.code for s in r.clause.statuses],
                "score": round(r.score, 2),
                "names_endpoint": r.relevance >= 2,
            }
            for r in reqs
        ]
    }


def scan_signals(project: ProjectHandle, run_id: str) -> dict:
    ctx = load_run(project, run_id)
    failure = ctx.result.failures[0]
    local = local_module_names(ctx)
    signals = [*infra_signals(ctx, failure, local), *backing_service_signals(ctx, failure)]
    crash = startup_crash(ctx, local)
    raised = uncaught_in_provider(ctx, failure, step_calls(ctx, failure))
    return {
        "environment": [
            {
                "kind": s.kind,
                "strong": s.strong,
                "on_failing_step": s.on_failing_step,
                "unit_id": s.unit_id,
                "where": f"{s.rel}:{s.line}" if s.line else s.rel,
                "text": s.text[:300],
            }
            for s in signals[:12]
        ],
        "unit_ports": {str(p): u for p, u in sorted(unit_ports(ctx).items())},
        "startup_crash": None
        if crash is None
        else {"unit_id": crash.unit_id, "where": f"{crash.rel}:{crash.line}", "text": crash.text[:300]},
        "uncaught_exception": None
        if raised is None
        else {
            "unit_id": raised.unit_id,
            "code": f"{raised.file}:{raised.line}",
            "seen_in": f"{raised.where}:{raised.where_line}" if raised.where_line else raised.where,
            "refusal_became_5xx": refused_became_error(failure),
        },
    }


def locate_handler(project: ProjectHandle, unit_id: str, method: str, path: str) -> dict:
    from .tools import diff_contract_vs_impl

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
        sides[key] = {
            side: [f"{op.signature()} [{op.at.rel}:{op.at.line}]" for op in ops[:4]]
            for side, ops in found.items()
            if ops
        }
    findings = compare(ctx, failure, calls)
    findings += [c.finding for c in side_checks(ctx, failure, calls) if c.finding is not None]
    findings += input_sides(ctx, failure, calls) + header_unread(ctx, failure, calls)
    declared = value_contradiction(ctx, failure, calls)
    findings += [declared.finding] if declared is not None else []
    distinguishing = distinguishing_input(ctx, failure, calls[-1]) if calls else None
    unspecified = (
        input_unspecified(ctx, failure, calls[-1], distinguishing) if distinguishing and not findings else None
    )
    never = unproduced(ctx, failure, calls[-1]) if calls and calls[-1].path is not None else None
    return {
        "interface": sides,
        "findings": [f.as_dict() for f in [*findings, *(x for x in (unspecified, never) if x)]],
        "distinguishing_input": None
        if distinguishing is None
        else {
            "inputs": dict(distinguishing.items),
            "passing_request": f"{distinguishing.passing.rel}:{distinguishing.passing.line}",
            "note": "a verdict whose root cause does not name this input is capped below auto-apply",
        },
        "sdd_decides": _decision(decide(ctx, failure)),
    }


def _decision(found: Decision | None) -> dict | None:
    """The SDD statement that holds the case's distinguishing values and the outcome it expects (an impl_bug of its
    section's unit), or two statements that hold them both ways (a person decides)."""
    if found is None:
        return None
    return {
        "kind": found.kind,
        "covers": list(found.covered),
        "statement": _statement(found.statement),
        "rival": _statement(found.rival) if found.rival is not None else None,
        "rival_states": found.run_literal,
    }


def _statement(st: Statement) -> dict:
    return {"at": f"{st.doc}:{st.line}", "unit": st.unit, "says": st.text[:300]}


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


class _EvidenceArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    evidence: list[str] = Field(description='items "path: quote" or "path:line: quote", project-relative')


class _RunArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    run_id: str


class _EndpointArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    run_id: str
    method: str = Field(description="GET, POST, ...")
    path: str = Field(description="the request path, e.g. /api/orders/42")


class _HandlerArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    unit_id: str
    method: str
    path: str


def _register() -> None:
    if "verify_evidence" in REGISTRY:
        return

    @tool("verify_evidence", "Check evidence items against the project files before you cite them: {ok, results[]}.")
    def _verify(ctx: ToolContext, args: _EvidenceArgs) -> dict:
        return verify_evidence(ctx.project, args.evidence)

    @tool(
        "find_sdd_clause", "SDD clauses about an endpoint in this run's failing case, best first, each as a citation."
    )
    def _clauses(ctx: ToolContext, args: _EndpointArgs) -> dict:
        return find_sdd_clause(ctx.project, args.run_id, args.method.upper(), args.path)

    @tool(
        "scan_signals",
        "Environment signals, failed connections to backing services, start-up crashes and uncaught exceptions in units' code.",
    )
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
        "disagreements between them (path_differs, field_missing, status_differs, status_unproduced, limit_violated, "
        "limits_disagree, input_unspecified), "
        "each with the two lines that disagree.",
    )
    def _interfaces(ctx: ToolContext, args: _RunArgs) -> dict:
        return compare_interfaces(ctx.project, args.run_id)

    @tool(
        "read_assertion", "The failing step's assertion: expected vs got, the message, and stack frames in units' code."
    )
    def _assertion(ctx: ToolContext, args: _RunArgs) -> dict:
        return read_assertion(ctx.project, args.run_id)


_register()
