"""`graphlemon bugs list|show|report|transition` over bugs.ndjson."""

from __future__ import annotations

from typing import Annotated, get_args

import typer

from ..errors import invalid_param
from ._common import JsonOpt, ProjectOpt, WideOpt, console, emit_json, line, open_project

app = typer.Typer(help="Bugs found by the loop or reported by people.", no_args_is_help=True)


def _tracker(project):
    from ..bugs import BugTracker

    return BugTracker(open_project(project).ledger)


def _check_choice(value: str | None, literal, what: str) -> None:
    choices = get_args(literal)
    if value is not None and value not in choices:
        raise invalid_param(f"unknown {what} {value!r}; choose one of: {', '.join(choices)}")


@app.command("list")
def list_(
    status: Annotated[str | None, typer.Option(help="open, fixing, fixed, verified, reopened or wontfix")] = None,
    unit: Annotated[str | None, typer.Option(help="Only bugs of this unit.")] = None,
    category: Annotated[str | None, typer.Option(help="unknown or a triage category.")] = None,
    source: Annotated[
        str | None, typer.Option(help="unit_test, unit_test_infra, integration, validator, human_reported")
    ] = None,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
    wide: WideOpt = False,
) -> None:
    """List bugs (newest first); the table fits the terminal (--wide: every column)."""
    from ..models import BugCategory, BugSource, BugStatus

    _check_choice(status, BugStatus, "status")
    _check_choice(category, BugCategory, "category")
    _check_choice(source, BugSource, "source")
    bugs = _tracker(project).list(unit_id=unit, status=status, category=category, source=source)
    bugs.sort(key=lambda b: b.opened_at, reverse=True)
    if as_json:
        emit_json([b.model_dump(mode="json") for b in bugs])
        return
    from ..wording import CATEGORY_WORDS, printable
    from .fit import Col, print_fitted

    # the validator's attribution (root cause) beside the triage category: a bug the triage never classified is
    # still "unknown" there ("not triaged yet" in words), while the validator may have said whose fault it was
    rows = [[b.bug_id, b.status, b.unit_id or "-", b.root_cause_category or "-", CATEGORY_WORDS.get(b.category, b.category),
             b.severity, printable(b.title)]
            for b in bugs]  # fmt: skip
    cols = [Col("bug_id", whole=True), Col("status", whole=True), Col("unit", whole=True), Col("root_cause", whole=True),
            Col("category", whole=True), Col("severity", whole=True), Col("title")]  # fmt: skip
    print_fitted(console(), f"{len(bugs)} bug(s)", cols, rows, wide,
                 priority=["bug_id", "status", "title", "unit", "root_cause"])  # fmt: skip


@app.command()
def show(
    bug_id: Annotated[str, typer.Argument(help="e.g. bug-20261202-1801-c9f2")],
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show one bug's current state and history."""
    tracker = _tracker(project)
    bug = tracker.get(bug_id)
    history = [e for e in tracker.ledger.read("bug") if e.bug_id == bug_id]
    if as_json:
        emit_json(
            {**bug.model_dump(mode="json"), "history": [e.model_dump(mode="json", exclude_none=True) for e in history]}
        )
        return
    out = console()
    out.print(line((bug.bug_id, "bold"), f"  {bug.status}  ({bug.severity}, {bug.category})"))
    out.print(f"title:  {bug.title}")
    for name in (
        "source",
        "unit_id",
        "test_name",
        "run_id",
        "task_id",
        "root_cause_category",
        "root_cause_detail",
        "suggested_route",
    ):
        value = getattr(bug, name)
        if value:
            out.print(f"{name}: {value}")
    if bug.detail:
        out.print("detail:", markup=False)
        out.print(bug.detail, markup=False, highlight=False)
    out.print("history:")
    for e in history:
        refs = f" fix_refs={','.join(e.fix_refs)}" if e.fix_refs else ""
        out.print(
            f"  {e.ts:%Y-%m-%d %H:%M:%S}  {e.event:<10} {e.from_status or '':>8} -> {e.status}  by {e.by}{refs}",
            markup=False,
        )


@app.command()
def report(
    title: Annotated[str, typer.Option(help="One line: what is wrong.")],
    description: Annotated[str, typer.Option(help="What you saw and what you expected (required).")],
    unit: Annotated[str | None, typer.Option(help="Unit the bug belongs to, if known.")] = None,
    severity: Annotated[str, typer.Option(help="low, medium, high or critical")] = "medium",
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Report a bug by hand (REQ-11 v_bug_feedback)."""
    from ..models import Severity

    _check_choice(severity, Severity, "severity")
    if not title.strip():
        raise invalid_param("bug title is empty")
    bug_id = _tracker(project).report(title=title.strip(), description=description, unit_id=unit, severity=severity)  # type: ignore[arg-type]
    if as_json:
        emit_json({"bug_id": bug_id})
    else:
        typer.echo(bug_id)


@app.command()
def transition(
    bug_id: Annotated[str, typer.Argument()],
    to: Annotated[str, typer.Argument(help="fixing, fixed, verified, reopened, wontfix, open")],
    note: Annotated[str | None, typer.Option(help="Why.")] = None,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Move a bug to another status (validated against the bug lifecycle)."""
    from ..models import BugStatus

    _check_choice(to, BugStatus, "status")
    before, after = _tracker(project).transition(bug_id, to, by="human", note=note)  # type: ignore[arg-type]
    if as_json:
        emit_json({"bug_id": bug_id, "from": before, "to": after})
    else:
        typer.echo(f"{bug_id}: {before} -> {after}")
