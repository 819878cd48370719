"""`graphlemon doctor sandbox`: what a confined run can and cannot do here; exit 1 where a promise does not hold."""

from __future__ import annotations

import typer

from ._common import JsonOpt, ProjectOpt, emit_json

app = typer.Typer(help="Check this machine against GraphLemon's promises.", no_args_is_help=True)


@app.command()
def sandbox(project: ProjectOpt = None, as_json: JsonOpt = False) -> None:
    """Start a probe inside the sandbox exactly as a test run starts (the project's limits when in a project) and
    print what it could see and do: uid, capabilities, seccomp, mounts, sockets, limits, network."""
    from ..errors import GraphLemonError
    from ..project import open_project
    from ..sandbox_doctor import diagnose, render

    try:
        state_dir = open_project(project).state_dir
    except GraphLemonError:
        if project is not None:
            raise
        state_dir = None  # outside a project: the default limits
    report = diagnose(state_dir)
    if as_json:
        emit_json({**report.model_dump(mode="json"), "ok": report.ok})
    else:
        typer.echo(render(report))
    if not report.ok:
        raise typer.Exit(1)
