"""`graphlemon console` (REQ-09/10/11/12): serve the live web console; `graphlemon console list`: the consoles
running now, each URL with its token (Jupyter's `server list`). Never imports Prefect at start."""

from __future__ import annotations

import signal
import sys
from typing import Annotated

import typer

from ._common import JsonOpt, ProjectOpt, emit_json


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Serve the web console; `graphlemon console list` prints the running ones' URLs.")

    @group.callback(invoke_without_command=True)
    def console(
        ctx: typer.Context,
        host: Annotated[
            str, typer.Option(help="Address to listen on; anything but loopback requires a token.")
        ] = "127.0.0.1",
        port: Annotated[int, typer.Option(help="Port to listen on (busy: the next free one, said so).")] = 8766,
        token: Annotated[
            str | None,
            typer.Option(help="Console token (default: $GRAPHLEMON_CONSOLE_TOKEN, else a new one is generated)."),
        ] = None,
        project: ProjectOpt = None,
    ) -> None:
        """Serve the web console: projects, dashboard, live DevLoop graph, task detail, goals, bugs, budgets."""
        if ctx.invoked_subcommand is not None:
            return
        from ..console import running_consoles
        from ..console.project_registry import ProjectRegistry
        from ..console.server import plan_binding, serve
        from ..errors import GraphLemonError
        from ..project import open_project

        binding = plan_binding(host, port, token, next_free=True)
        registry = ProjectRegistry()
        try:  # the project given, or the one around the current directory, is registered (like `init` does)
            registry.register(open_project(project))
        except GraphLemonError:
            if project is not None:
                raise
        if binding.asked_port is not None:
            typer.echo(f"port {binding.asked_port} is busy (another console? `graphlemon console list`): "
                       f"serving on port {binding.port}")  # fmt: skip
        typer.echo(f"GraphLemon console: {binding.url}")
        if not binding.loopback and not binding.token_given:
            typer.echo(f"token (generated): {binding.token}")
        typer.echo("(open it in your browser; `graphlemon console list` prints it again)")
        record = running_consoles.record(binding.host, binding.port, binding.url)
        # uvicorn stops on SIGTERM and then raises it again: as SystemExit here, so the record is removed
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        try:
            serve(binding)
        finally:
            running_consoles.forget(record)

    @group.command("list")
    def list_(as_json: JsonOpt = False) -> None:
        """The consoles running now for this user: each URL with its token (from a file only this user can read)."""
        from ..console.running_consoles import folder, running

        found = running()
        if as_json:
            emit_json({"consoles": [c.model_dump(mode="json") for c in found]})
            return
        if not found:
            typer.echo(f"no console is running (records: {folder()}); start one: graphlemon console")
            return
        for c in found:
            typer.echo(f"{c.url}  (pid {c.pid}, since {c.started_at:%Y-%m-%d %H:%M:%S} UTC, started in {c.cwd})")

    app.add_typer(group, name="console")
