"""Prefect flow `log_retention` (p_log_retention_cleanup, REQ-13): purge closed execution logs past retention.

The work is `graphlemon.execlogs.retention.purge_expired` (plain Python, over the execution_log_file records): every `closed`
log closed before now - retention_days becomes `purged` and its folder is deleted; a deletion that fails is
`purge_failed` with the error, does not stop the others, and is retried on the next run; an `open` log is never
touched. `retention_days` defaults to the project's setting (log_retention_config: `graphlemon logs retention set`
or the console's settings page); the daily deployment in prefect.yaml passes none.
"""

from __future__ import annotations

from prefect import flow, task

from graphlemon.execlogs.retention import PurgeResult, run_retention
from graphlemon.flows._params import project_dir
from graphlemon.project import open_project
from graphlemon.tasks._common import artifact_key
from graphlemon.tasks._redacted_artifacts import create_markdown_artifact


@task(name="log-retention-cleanup")
def log_retention_cleanup(project: str, retention_days: int | None) -> PurgeResult:
    return run_retention(open_project(project).ledger, retention_days)


@flow(name="log_retention", log_prints=True)
def log_retention(project: str | None = None, retention_days: int | None = None) -> PurgeResult:
    """Purge closed execution logs older than the retention setting; failures are recorded and retried next run."""
    chosen = project_dir(project)
    result = log_retention_cleanup(chosen, retention_days)
    lines = [f"- purged `{p.path}` ({p.size_bytes} bytes)" for p in result.purged]
    lines += [f"- **failed** `{f.path}`: {f.error}" for f in result.failed]
    create_markdown_artifact(
        markdown=result.summary() + "\n\n" + "\n".join(lines),
        key=artifact_key(open_project(chosen).project_id, "log-retention"),
    )
    print(result.summary())
    return result
