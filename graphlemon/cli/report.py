"""`graphlemon report convergence|budget|bugs|skills`: the analytics reports over the ledger (no Prefect)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..errors import invalid_param
from ._common import ProjectOpt, WideOpt, console

app = typer.Typer(
    help="Reports over the ledger (DuckDB): convergence, budget, bug history. Default output: tables.",
    no_args_is_help=True,
)

TaskOpt = Annotated[str | None, typer.Option("--task", help="Only this task (task_id).")]
UnitOpt = Annotated[str | None, typer.Option("--unit", help="Only this unit (unit_id).")]
SinceOpt = Annotated[
    str | None, typer.Option("--since", help="From this time (UTC): 2026-01-31, 2026-01-31T12:00, 7d, 12h.")
]
UntilOpt = Annotated[str | None, typer.Option("--until", help="Before this time (same forms as --since).")]
SectionOpt = Annotated[
    str | None, typer.Option("--section", help="Print one section only (CSV prints the first by default).")
]
JsonOut = Annotated[
    bool, typer.Option("--json", help="One JSON document: {report, filters, sections: {name: [rows]}}.")
]
CsvOut = Annotated[bool, typer.Option("--csv", help="One section as CSV (lists as JSON arrays).")]
MdOut = Annotated[bool, typer.Option("--md", help="Markdown tables.")]
LimitOpt = Annotated[int, typer.Option("--limit", min=0, help="Rows per section in tables and markdown (0 = all).")]


def _emit(
    name: str,
    project: Path | None,
    filters: dict,
    section: str | None,
    as_json: bool,
    as_csv: bool,
    as_md: bool,
    limit: int,
    wide: bool = False,
) -> None:
    if as_json + as_csv + as_md > 1:
        raise invalid_param("choose one of --json, --csv, --md")
    from graphlemon.analytics import build_report, make_filters
    from graphlemon.analytics.formats import to_csv, to_json, to_markdown

    from .frames import print_rich

    task_ids = _task_ids(project)
    if filters.get("task"):  # a unique prefix (as the tables show ids) names its task
        filters = {**filters, "task": _resolve(filters["task"], task_ids)}
    report = build_report(name, project, filters=make_filters(**filters))
    if section is not None:
        report.section(section)  # INVALID_PARAM for an unknown section
    if as_json:
        typer.echo(to_json(report, section))
    elif as_csv:
        typer.echo(to_csv(report.section(section)), nl=False)
    elif as_md:
        typer.echo(to_markdown(report, section, limit))
    else:
        _name_taskless_rows(report)
        print_rich(report, console(), section, limit, wide)


NO_TASK = "(no task)"


def _name_taskless_rows(report) -> None:
    """A table row of work that belongs to no task (a bug reported by hand, an ad-hoc run) says so, instead of a
    row of dashes that reads like a phantom task; JSON and CSV keep their null."""
    for frame in report.sections.values():
        if "task_id" in frame.columns and frame["task_id"].isna().any():
            frame["task_id"] = frame["task_id"].astype(object).where(frame["task_id"].notna(), NO_TASK)


@app.command()
def convergence(
    task: TaskOpt = None,
    unit: UnitOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    section: SectionOpt = None,
    as_json: JsonOut = False,
    as_csv: CsvOut = False,
    as_md: MdOut = False,
    limit: LimitOpt = 50,
    project: ProjectOpt = None,
    wide: WideOpt = False,
) -> None:
    """Is the loop converging? Per unit and per task: rounds, failures per round, rounds to green, bugs, stuck units.

    Sections: units, tasks.
    """
    _emit(
        "convergence",
        project,
        {"task": task, "unit": unit, "since": since, "until": until},
        section,
        as_json,
        as_csv,
        as_md,
        limit,
        wide,
    )


@app.command()
def budget(
    task: TaskOpt = None,
    unit: UnitOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    section: SectionOpt = None,
    as_json: JsonOut = False,
    as_csv: CsvOut = False,
    as_md: MdOut = False,
    limit: LimitOpt = 50,
    project: ProjectOpt = None,
    wide: WideOpt = False,
) -> None:
    """What did it cost? Tokens and cost by task, stage, role, model; cache hit share; burn vs. limit; waits.

    Sections: tasks, by_stage, by_role, by_model, breakdown, spend_over_time.
    """
    _emit(
        "budget",
        project,
        {"task": task, "unit": unit, "since": since, "until": until},
        section,
        as_json,
        as_csv,
        as_md,
        limit,
        wide,
    )


@app.command()
def bugs(
    task: TaskOpt = None,
    unit: UnitOpt = None,
    test: Annotated[str | None, typer.Option("--test", help="Only bugs / flaky results of this test name.")] = None,
    category: Annotated[
        str | None, typer.Option("--category", help="unknown, contract_mismatch, impl_bug, spec_ambiguous, infra_flake")
    ] = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    section: SectionOpt = None,
    as_json: JsonOut = False,
    as_csv: CsvOut = False,
    as_md: MdOut = False,
    limit: LimitOpt = 50,
    project: ProjectOpt = None,
    wide: WideOpt = False,
) -> None:
    """Which bugs keep coming back? Open bugs by age and severity, recurring signatures, flaky tests, root causes.

    Sections: open_bugs, open_by_age, signatures, flaky_tests, root_causes, categories.
    """
    filters = {"task": task, "unit": unit, "test": test, "category": category, "since": since, "until": until}
    _emit("bugs", project, filters, section, as_json, as_csv, as_md, limit, wide)


@app.command()
def skills(
    task: TaskOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    section: SectionOpt = None,
    as_json: JsonOut = False,
    as_csv: CsvOut = False,
    as_md: MdOut = False,
    limit: LimitOpt = 50,
    project: ProjectOpt = None,
    wide: WideOpt = False,
) -> None:
    """Are the skills getting better? Iterations per role, applied vs rejected, bugs per skill version (REQ-08).

    Sections: by_role, iterations, bugs_per_version.
    """
    filters = {"task": task, "since": since, "until": until}
    _emit("skills", project, filters, section, as_json, as_csv, as_md, limit, wide)


def _task_ids(project: Path | None) -> list[str]:
    from ..project import open_project
    from ..taskboard import TaskBoard

    return list(TaskBoard(open_project(project).ledger).all())


def _resolve(task: str, task_ids: list[str]) -> str:
    """The one task id `task` is a prefix of; TASK_NOT_FOUND when it names none (an empty report would read as
    "nothing happened" for a typo)."""
    from ..errors import ErrorCode, GraphLemonError

    if task in task_ids or not task.strip():
        return task  # a blank one is refused by the filters (INVALID_PARAM)
    matches = [t for t in task_ids if t.startswith(task)]
    if len(matches) > 1:
        raise invalid_param(f"--task {task!r} is the start of {len(matches)} task ids: give more of it")
    if not matches:
        raise GraphLemonError(ErrorCode.TASK_NOT_FOUND, f"--task {task!r}: no task in this project", task_id=task)
    return matches[0]
