"""`graphlemon sql "SELECT ..."` over the ledger views, and `--shell-init` for the DuckDB shell."""

from __future__ import annotations

from typing import Annotated

import typer

from ..errors import invalid_param
from ._common import ProjectOpt, console


def register(app: typer.Typer) -> None:
    @app.command()
    def sql(
        query: Annotated[
            str | None, typer.Argument(help='e.g. "SELECT model, sum(cost_usd) FROM usage GROUP BY ALL"')
        ] = None,
        shell_init: Annotated[
            bool,
            typer.Option(
                "--shell-init",
                help="Print the view DDL instead: graphlemon sql --shell-init > v.sql; duckdb -init v.sql",
            ),
        ] = False,
        as_json: Annotated[bool, typer.Option("--json", help="Rows as one JSON array.")] = False,
        as_csv: Annotated[bool, typer.Option("--csv", help="Rows as CSV.")] = False,
        project: ProjectOpt = None,
    ) -> None:
        """Run SQL over the ledger (validated, read-only). Views: tasks, nodes, runs, bugs, usage, triage,
        artifacts, timeline, budget, escalations, and derived bug_state, run_failures, task_state, budget_limits.
        """
        from graphlemon import analytics

        if shell_init:
            if query is not None:
                raise invalid_param("--shell-init prints the view DDL and takes no query")
            typer.echo(analytics.shell_init(project), nl=False)
            return
        if query is None:
            raise invalid_param('give a query, e.g. graphlemon sql "SELECT count(*) FROM runs", or --shell-init')
        if as_json and as_csv:
            raise invalid_param("choose one of --json, --csv")
        from graphlemon.analytics.formats import records, to_csv

        from .frames import print_frame

        frame = analytics.sql(query, project)
        if as_json:
            import json

            typer.echo(json.dumps(records(frame), ensure_ascii=False))
        elif as_csv:
            typer.echo(to_csv(frame), nl=False)
        else:
            print_frame(console(), frame, f"{len(frame)} row(s)", limit=0)
