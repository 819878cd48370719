"""`graphlemon server status|start|stop`: GraphLemon's local Prefect server, which `graphlemon run` starts once and
reuses while no Prefect API is configured (graphlemon/local_server.py, docs/prefect.md)."""

from __future__ import annotations

import typer

from ._common import JsonOpt, emit_json

app = typer.Typer(help="GraphLemon's local Prefect server (reused by `graphlemon run`; stopped when idle).",
                  no_args_is_help=True)  # fmt: skip


def _print(data: dict) -> None:
    if data["state"] == "stopped":
        typer.echo(f"stopped (folder {data['folder']})")
        return
    typer.echo(f"{data['state']}: API {data['url']} · UI {data['ui']} · Prefect {data['prefect_version']} · pid {data['pid']} · started "
               f"{data['started_at']} · stops after {data['idle_minutes']:g} idle minutes · "
               f"{data['commands_using_it']} command(s) using it")  # fmt: skip


@app.command()
def status(as_json: JsonOpt = False) -> None:
    """Whether the local server runs, its API and UI addresses, and how many commands use it."""
    from ..local_server import state_dir
    from ..local_server import status as server_status

    data = server_status(state_dir())
    emit_json(data) if as_json else _print(data)


@app.command()
def start(as_json: JsonOpt = False) -> None:
    """Start the local server (or find it running) and wait until it answers; it stops after its idle minutes."""
    from ..local_server import ensure, release_lease, state_dir, wait_ready
    from ..local_server import status as server_status

    directory = state_dir()
    info, _ = ensure(directory)
    wait_ready(directory, info)
    release_lease(directory)  # the server now waits for runs; its idle minutes start here
    data = server_status(directory)
    emit_json(data) if as_json else _print(data)


@app.command()
def stop(as_json: JsonOpt = False) -> None:
    """Stop the local server now (a run using it fails: stop it between runs)."""
    from ..local_server import state_dir
    from ..local_server import stop as stop_server

    info = stop_server(state_dir())
    data = {"stopped": info is not None, "pid": info.pid if info else None, "url": info.url if info else None}
    if as_json:
        emit_json(data)
    else:
        typer.echo(f"stopped the server {info.url} (pid {info.pid})" if info else "no local server was running")
