"""The public face of analytics: reports as DataFrames (notebooks), SQL, shell DDL, report files.

import analytics
analytics.convergence("path/to/repo")                     # units section, a DataFrame
analytics.budget("path/to/repo", section="by_model", since="7d")
analytics.bugs("path/to/repo", section="flaky_tests", unit="todo-be")
analytics.sql("SELECT model, sum(cost_usd) FROM usage GROUP BY ALL", "path/to/repo")
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import get_args

import pandas as pd

from graphlemon.errors import invalid_param
from graphlemon.models import BugCategory
from graphlemon.project import open_project

from .db import LedgerDB, shell_init_sql
from .formats import to_json, to_markdown
from .report import Report, ReportFilters, parse_when
from .reports.budget import budget_report
from .reports.bug_history import bug_history_report
from .reports.convergence import convergence_report
from .reports.skills import skills_report

REPORTS: dict[str, Callable[[LedgerDB, ReportFilters], Report]] = {
    "convergence": convergence_report,
    "budget": budget_report,
    "bugs": bug_history_report,
    "skills": skills_report,
}
ProjectArg = Path | str | None


def open_db(project: ProjectArg = None, *, cache: bool = True) -> LedgerDB:
    """The project's ledger in an in-memory DuckDB (validated, cached as Parquet); close it or use `with`."""
    return LedgerDB(open_project(project).state_dir, cache=cache)


def make_filters(
    *,
    task: str | None = None,
    unit: str | None = None,
    test: str | None = None,
    category: str | None = None,
    since: str | datetime | None = None,
    until: str | datetime | None = None,
    as_of: str | datetime | None = None,
) -> ReportFilters:
    """Checked filters; dates may be datetimes or text (`2026-01-31`, `7d`, ...)."""
    for name, value in (("task", task), ("unit", unit), ("test", test)):
        if value is not None and not value.strip():
            raise invalid_param(f"--{name} is empty")
    if category is not None and category not in get_args(BugCategory):
        raise invalid_param(f"unknown category {category!r}; choose one of: {', '.join(get_args(BugCategory))}")
    since_t, until_t, as_of_t = (_when(v) for v in (since, until, as_of))
    if since_t and until_t and since_t >= until_t:
        raise invalid_param(f"--since ({since}) must be before --until ({until})")
    return ReportFilters(
        task=task, unit=unit, test=test, category=category, since=since_t, until=until_t, as_of=as_of_t
    )


def _when(value: str | datetime | None) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)  # naive = UTC, as on the command line
    return parse_when(value)


def build_report(
    name: str, project: ProjectArg = None, *, db: LedgerDB | None = None, filters: ReportFilters | None = None
) -> Report:
    if name not in REPORTS:
        raise invalid_param(f"unknown report {name!r}; choose one of: {', '.join(REPORTS)}")
    if db is not None:
        return REPORTS[name](db, filters or ReportFilters())
    with open_db(project) as own:
        return REPORTS[name](own, filters or ReportFilters())


def convergence(project: ProjectArg = None, *, section: str = "units", **filters) -> pd.DataFrame:
    """Convergence per unit (`section="units"`) or per task (`"tasks"`)."""
    return build_report("convergence", project, filters=make_filters(**filters)).section(section)


def budget(project: ProjectArg = None, *, section: str = "tasks", **filters) -> pd.DataFrame:
    """Spend and burn per task; sections by_stage, by_role, by_model, breakdown, spend_over_time."""
    return build_report("budget", project, filters=make_filters(**filters)).section(section)


def bugs(project: ProjectArg = None, *, section: str = "open_bugs", **filters) -> pd.DataFrame:
    """Open bugs; sections open_by_age, signatures, flaky_tests, root_causes, categories."""
    return build_report("bugs", project, filters=make_filters(**filters)).section(section)


def sql(query: str, project: ProjectArg = None) -> pd.DataFrame:
    """Any SQL over the ledger views (read-only: file access is off once the ledger is loaded)."""
    with open_db(project) as db:
        return db.user_query(query)


def shell_init(project: ProjectArg = None) -> str:
    """The view DDL for `duckdb -init FILE`."""
    return shell_init_sql(open_project(project).state_dir)


@dataclass
class ReportBundle:
    """What `write_reports` produced."""

    project_id: str
    out_dir: Path
    reports: list[Report]
    files: list[Path]


def write_reports(
    project: ProjectArg = None, *, out_dir: Path | None = None, filters: ReportFilters | None = None
) -> ReportBundle:
    """All reports as markdown + JSON, and the two PNG plots, under `.graphlemon/reports/` (overwritten)."""
    handle = open_project(project)
    out = Path(out_dir) if out_dir is not None else handle.state_dir / "reports"
    out.mkdir(parents=True, exist_ok=True)
    with LedgerDB(handle.state_dir) as db:
        reports = [fn(db, filters or ReportFilters()) for fn in REPORTS.values()]
    files = []
    for report in reports:
        files.append(_write_text(out / f"{report.name}.md", to_markdown(report)))
        files.append(_write_text(out / f"{report.name}.json", to_json(report)))
    from . import plots  # matplotlib only where plots are drawn

    by_name = {r.name: r for r in reports}
    files.append(plots.failures_per_round_png(by_name["convergence"].section("units"), out / "failures-per-round.png"))
    files.append(plots.spend_over_time_png(by_name["budget"].section("spend_over_time"), out / "spend-over-time.png"))
    return ReportBundle(handle.project_id, out, reports, files)


def _write_text(path: Path, text: str) -> Path:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path
