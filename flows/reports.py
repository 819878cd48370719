"""Prefect flow `reports`: the three analytics reports as files, PNG plots and UI artifacts.

Deployed nightly from prefect.yaml. Writes `.graphlemon/reports/{convergence,budget,bugs}.{md,json}`
and `failures-per-round.png`, `spend-over-time.png`, then one table artifact (the main section)
and one markdown artifact (every section) per report, keyed `<project-id>-<report>-table|md`.
"""

from __future__ import annotations

from prefect import flow, task

from graphlemon import analytics
from graphlemon.analytics.formats import records, to_markdown
from graphlemon.flows._params import project_dir
from graphlemon.tasks._common import artifact_key
from graphlemon.tasks._redacted_artifacts import create_markdown_artifact, create_table_artifact

ARTIFACT_ROWS = 200  # rows of a table artifact; the markdown file and artifact say how many there are


@task(name="write-reports", task_run_name="write reports · {project}")
def write_reports(project: str, task_id: str | None, since: str | None) -> analytics.ReportBundle:
    return analytics.write_reports(project, filters=analytics.make_filters(task=task_id, since=since))


@task(name="publish-report-artifacts", task_run_name="publish report artifacts · {bundle.project_id}")
def publish_report_artifacts(bundle: analytics.ReportBundle) -> list[str]:
    keys = []
    for report in bundle.reports:
        main = report.section()
        key = artifact_key(bundle.project_id, report.name)
        about = f"{report.title}: {len(main)} row(s) in the main section; files in {bundle.out_dir}"
        create_table_artifact(table=records(main.head(ARTIFACT_ROWS)), key=f"{key}-table", description=about)
        create_markdown_artifact(markdown=to_markdown(report), key=f"{key}-md", description=about)
        keys += [f"{key}-table", f"{key}-md"]
    return keys


@flow(name="reports", log_prints=True)
def reports(project: str | None = None, task_id: str | None = None, since: str | None = None) -> list[str]:
    """Convergence, budget and bug-history reports for one project; returns the files written."""
    bundle = write_reports(project_dir(project), task_id, since)
    keys = publish_report_artifacts(bundle)
    print(f"reports: {len(bundle.files)} file(s) in {bundle.out_dir}; artifacts {', '.join(keys)}")
    return [str(path) for path in bundle.files]
