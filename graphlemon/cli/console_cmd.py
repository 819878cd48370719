"""`graphlemon console`: the live web console (REQ-09/10/11/12). Never imports Prefect at start."""

from __future__ import annotations

from typing import Annotated

import typer

from ._common import ProjectOpt


def register(app: typer.Typer) -> None:
    @app.command()
    def console(
        host: Annotated[
            str, typer.Option(help="Address to listen on; anything but loopback requires a token.")
        ] = "127.0.0.1",
        port: Annotated[int, typer.Option(help="Port to listen on.")] = 8766,
        token: Annotated[
            str | None,
            typer.Option(help="Console token (default: $GRAPHLEMON_CONSOLE_TOKEN, else a new one is generated)."),
        ] = None,
        project: ProjectOpt = None,
    ) -> None:
        """Serve the web console: projects, dashboard, live DevLoop graph, task detail, goals, bugs, budgets."""
        from ..console.project_registry import ProjectRegistry
        from ..console.server import plan_binding, serve
        from ..errors import GraphLemonError
        from ..project import open_project

        binding = plan_binding(host, port, token)
        registry = ProjectRegistry()
        try:  # the project given, or the one around the current directory, is registered (like `init` does)
            registry.register(open_project(project))
        except GraphLemonError:
            if project is not None:
                raise
        typer.echo(f"GraphLemon console: {binding.url}")
        if not binding.loopback and not binding.token_given:
            typer.echo(f"token (generated): {binding.token}")
        serve(binding)
