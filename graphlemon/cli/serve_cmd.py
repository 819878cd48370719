"""`graphlemon serve`: the GraphLemon service of one installed copy of the code (REQ-15): the console plus,
with --worker, a Prefect worker serving the devloop deployment; GET /healthz reports the commit and status."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ._common import ProjectOpt


def register(app: typer.Typer) -> None:
    @app.command()
    def serve(
        port: Annotated[int, typer.Option(help="Port of the console and its /healthz.")] = 8766,
        commit: Annotated[
            str | None, typer.Option(help="The commit this copy is (default: `git rev-parse HEAD` of the code).")
        ] = None,
        worker: Annotated[
            bool, typer.Option("--worker/--no-worker", help="Also run a Prefect worker for the devloop deployment.")
        ] = False,
        pool: Annotated[str, typer.Option(help="The work pool the worker serves.")] = "graphlemon",
        project: ProjectOpt = None,
    ) -> None:
        """Serve this copy of GraphLemon on 127.0.0.1: console, /healthz and (with --worker) a Prefect worker."""
        from ..console.project_registry import ProjectRegistry
        from ..console.server import plan_binding
        from ..console.server import serve as serve_console
        from ..deploy.service import Service
        from ..project import open_project

        binding = plan_binding("127.0.0.1", port, None)
        registry = ProjectRegistry()
        handle = open_project(project)
        registry.register(handle)
        code_dir = Path(__file__).resolve().parents[2]
        service = Service(code_dir=code_dir, project=handle.root, commit=commit, worker=worker, pool=pool)
        typer.echo(f"GraphLemon service {service.commit[:12]} from {code_dir}: {binding.url}")
        service.run(lambda health: serve_console(binding, registry=registry, health=health))
