"""Bug tools over bugs.ndjson (graphlemon/bugs.py): bug_open (deduplicated), bug_transition, bug_list."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ...bugs import BugTracker
from ...models import BugCategory, BugSource, BugStatus, Severity
from ..tool_context import ToolContext
from .registry import tool

MAX_LISTED = 100


class BugOpenArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    title: str = Field(min_length=1, max_length=500)
    source: BugSource = "unit_test"
    unit_id: str | None = Field(default=None, description="Defaults to the turn's unit.")
    test_name: str | None = None
    run_id: str | None = Field(default=None, description="Defaults to the turn's run.")
    detail: str = Field(default="", max_length=20_000)
    category: BugCategory = "unknown"
    severity: Severity = "medium"
    affected_units: list[str] | None = None
    signature: str | None = None


@tool("bug_open", "Open a bug (reuses the id of an active bug with the same unit and test).")
def bug_open(ctx: ToolContext, args: BugOpenArgs) -> dict:
    bug_id, created = BugTracker(ctx.ledger).open(
        title=args.title,
        source=args.source,
        unit_id=args.unit_id or ctx.unit_id,
        test_name=args.test_name,
        run_id=args.run_id or ctx.run_id,
        task_id=ctx.task_id,
        detail=args.detail,
        category=args.category,
        severity=args.severity,
        affected_units=args.affected_units,
        signature=args.signature,
        by=ctx.role,
    )
    return {"bug_id": bug_id, "created": created}


class BugTransitionArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    bug_id: str = Field(min_length=1)
    to: BugStatus
    fix_refs: list[str] = Field(default_factory=list)
    note: str | None = None


@tool("bug_transition", "Move a bug to another status (validated against the bug lifecycle).")
def bug_transition(ctx: ToolContext, args: BugTransitionArgs) -> dict:
    before, after = BugTracker(ctx.ledger).transition(
        args.bug_id, args.to, by=ctx.role, fix_refs=args.fix_refs, note=args.note
    )
    return {"bug_id": args.bug_id, "from": before, "to": after}


class BugListArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    unit_id: str | None = None
    status: list[BugStatus] = Field(default_factory=list, description="Empty: any status.")
    category: BugCategory | None = None
    source: BugSource | None = None


@tool(
    "bug_list",
    "List the project's bugs (id, status, unit, test, title, category, severity), filtered by unit, statuses, "
    "category or source. Use it to see whether a failure is already known and which bugs a unit still has. At "
    "most the 100 latest matching bugs are listed: filter to see others.",
)
def bug_list(ctx: ToolContext, args: BugListArgs) -> dict:
    bugs = BugTracker(ctx.ledger).list(
        unit_id=args.unit_id, status=args.status or None, category=args.category, source=args.source
    )
    fields = ("bug_id", "status", "unit_id", "test_name", "title", "category", "severity", "run_id", "signature")
    listed = bugs[-MAX_LISTED:]
    out: dict = {"bugs": [b.model_dump(mode="json", include=set(fields)) for b in listed]}
    if len(bugs) > len(listed):
        out["more"] = f"{len(bugs) - len(listed)} earlier bugs not listed; filter by unit, status or category"
    return out
