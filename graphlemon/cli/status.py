"""`graphlemon status`: the project, its ledger and what needs attention."""

from __future__ import annotations

from collections import Counter

import typer

from ._common import JsonOpt, ProjectOpt, console, emit_json, open_project


def register(app: typer.Typer) -> None:
    @app.command()
    def status(project: ProjectOpt = None, as_json: JsonOpt = False) -> None:
        """Show the project, ledger sizes and bug counts."""
        from ..bugs import BugTracker
        from ..models import LEDGER_FILES

        handle = open_project(project)
        ledger = handle.ledger
        counts = {kind: len(ledger.read(kind)) for kind in LEDGER_FILES}
        bugs = Counter(b.status for b in BugTracker(ledger).all().values())
        data = {
            "project_id": handle.project_id,
            "root": str(handle.root),
            "records": counts,
            "bugs": dict(bugs),
        }
        if as_json:
            emit_json(data)
            return
        out = console()
        out.print(f"[bold]project[/bold] {handle.project_id}  {handle.root}")
        out.print("ledger: " + ", ".join(f"{k}={v}" for k, v in counts.items()))
        out.print("bugs:   " + (", ".join(f"{k}={v}" for k, v in sorted(bugs.items())) or "none"))
