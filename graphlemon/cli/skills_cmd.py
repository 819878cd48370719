"""`graphlemon skills update|rollback|log|show`: a project's skills, changed only through gated iterations (REQ-08)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..errors import invalid_param
from ._common import JsonOpt, ProjectOpt, WideOpt, console, emit_json, open_project

app = typer.Typer(
    help="Role skills in the project's skills repository (.graphlemon/skills/): update, roll back, audit log.",
    no_args_is_help=True,
)


def _iterations(handle):
    from ..skills.iteration import SkillIterations

    return SkillIterations(handle.state_dir, handle.ledger)


@app.command()
def update(
    role: Annotated[str, typer.Argument(help="The role whose skill changes: coder, tester, planner, ...")],
    bug: Annotated[
        str | None, typer.Option("--bug", help="The skill_defect bug that triggers the change (required).")
    ] = None,
    file: Annotated[Path | None, typer.Option("--file", help="The new skill text (markdown).")] = None,
    edit: Annotated[bool, typer.Option("--edit", help="Edit the current text in $EDITOR.")] = False,
    rationale: Annotated[
        str | None, typer.Option("--rationale", help="Why (default: asks for the bug's root cause).")
    ] = None,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Propose a new skill text for ROLE, triggered by a skill_defect bug; the regression gate replays the bug's
    node with it (its task's executor) and applies or rejects it. One commit in the skills repository. Refused
    before anything is written when the bug's test already passes; exit 1 when the gate rejects the change."""
    handle = open_project(project)
    iterations = _iterations(handle)
    found = iterations.check_trigger(role, bug)  # refused before anything is read or written
    if (file is None) == (not edit):
        raise invalid_param("give the new text with exactly one of --file NEW.md or --edit")
    iterations.repo.ensure(handle.ledger)
    if file is not None:
        if not file.is_file():
            raise invalid_param(f"{file} is not a file")
        try:
            text = file.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise invalid_param(f"{file} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    else:
        text = typer.edit(iterations.repo.text_at(role, iterations.repo.head()), extension=".md") or ""
    if not text.strip():
        raise invalid_param(f"the new {role} skill is empty")
    from ..stages.skill_editor import gate_for_person

    why = rationale or f"fixes {found.bug_id}: {found.root_cause_detail}"
    it = gate_for_person(handle, iterations, role, found, text, why)
    if as_json:
        emit_json(it)
    else:
        typer.echo(
            f"{it.iteration_id}: {it.skill} skill {it.status} (commit {it.commit[:12]}, bug {it.triggered_by_bug_id})"
        )
        if it.gate is not None:
            typer.echo(f"gate: {it.gate.note}")
    if it.status != "applied":  # rejected by the gate: reverted, and the command failed
        raise typer.Exit(1)


@app.command()
def rollback(
    iteration_id: Annotated[str, typer.Argument(help="e.g. si-20261203140501-ab12")],
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Revert an applied iteration as a new commit (history is kept). Refused while a later applied iteration of
    the same skill builds on it: roll that one back first."""
    handle = open_project(project)
    it = _iterations(handle).rollback(iteration_id, by="human")
    if as_json:
        emit_json(it)
    else:
        typer.echo(f"{it.iteration_id}: rolled back ({it.history[-1]})")


@app.command("log")
def log_(
    role: Annotated[str | None, typer.Argument(help="Only this role's skill.")] = None,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
    wide: WideOpt = False,
) -> None:
    """The audit log: every iteration, oldest first, with its bug, author, status and gate (the table fits the
    terminal; --wide shows every column)."""
    from ..skills.iteration import skill_log

    handle = open_project(project)
    items = skill_log(handle.state_dir, handle.ledger, role)
    if as_json:
        emit_json([it.model_dump(mode="json") for it in items])
        return
    from .fit import Col, print_fitted

    rows = [[it.iteration_id, it.skill, it.status, it.triggered_by_bug_id, it.author, it.commit[:10], it.diff_stat,
             "-" if it.gate is None else ("passed" if it.gate.ok else "failed")] for it in items]  # fmt: skip
    cols = [Col("iteration", whole=True), Col("skill", whole=True), Col("status", whole=True), Col("bug", whole=True),
            Col("author", whole=True), Col("commit", whole=True), Col("diff"), Col("gate", whole=True)]  # fmt: skip
    print_fitted(console(), f"{len(items)} skill iteration(s)", cols, rows, wide,
                 priority=["iteration", "skill", "status", "gate", "bug"])  # fmt: skip


@app.command()
def show(
    iteration_id: Annotated[str, typer.Argument()],
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """One iteration: its diff, the bug, the rationale, the gate's results and its history."""
    from ..skills.iteration import iteration_detail

    handle = open_project(project)
    detail = iteration_detail(handle.state_dir, handle.ledger, iteration_id)
    if as_json:
        emit_json(detail)
        return
    it = detail.iteration
    lines = [
        f"{it.iteration_id}  {it.skill} skill  {it.status}",
        f"bug:       {it.triggered_by_bug_id}"
        + (f" ({detail.bug_status}) {detail.bug_title}" if detail.bug_title else ""),
        f"author:    {it.author}",
        f"commits:   {it.parent_commit[:12]} -> {it.commit[:12]}"
        + (f" (reverted by {it.revert_commit[:12]})" if it.revert_commit else ""),
        f"rationale: {it.rationale}",
    ]
    if it.gate is not None:
        g = it.gate
        lines += [
            f"gate:      {'passed' if g.ok else 'failed'}: {g.note}",
            f"  replayed {g.replayed_node or '-'}; bug test {g.bug_test or '-'}: {'passes' if g.bug_test_passed else 'fails'}",
            f"  green before: {', '.join(g.green_before) or '-'}; newly red: {', '.join(g.newly_red) or '-'}",
        ]
    lines += ["history:", *(f"  {h}" for h in it.history), "", detail.diff]
    typer.echo("\n".join(lines))  # plain text: a diff must not be wrapped or read as markup
