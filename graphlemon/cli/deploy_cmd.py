"""`graphlemon deploy bootstrap | stage | merged | status | rollback | down` (REQ-15): blue-green deployment of
GraphLemon itself. `stage COMMIT` runs the whole supervisor (stage, health check with the canary task, cutover, monitoring
window, finalize, or a rollback) as the Prefect flow `deploy-supervisor` (`--no-prefect`: the same domain calls
in this process); `merged TASK` does the same for the merge a DevLoop task left in the self-hosted repository.
`status` reads the ledger only and never imports Prefect."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ._common import JsonOpt, ProjectOpt, console, emit_json, line, open_project

app = typer.Typer(help="Blue-green deployment of GraphLemon itself (REQ-15).", no_args_is_help=True)

RootOpt = Annotated[
    Path | None, typer.Option("--root", help="Deploy folder (instances, proxy, state); default <project>/.graphlemon/deploy.")
]
PortOpt = Annotated[int, typer.Option("--public-port", help="The public address 127.0.0.1:PORT (the proxy).")]


def _config(public_port: int, window: float | None = None, interval: float | None = None,
            threshold: float | None = None, worker: bool = False, canary_engine: str = "prefect"):  # fmt: skip
    from ..deploy.health_signals import Thresholds
    from ..deploy.supervisor import DeployConfig

    fields: dict = {"public_port": public_port, "worker": worker, "canary_engine": canary_engine}
    if window is not None:
        fields["monitor_window_s"] = window
    if interval is not None:
        fields["monitor_interval_s"] = interval
    if threshold is not None:
        fields["thresholds"] = Thresholds(validator_rate_deviation_threshold=threshold)
    return DeployConfig(**fields)


def _supervisor(project, root, config):
    """The project's supervisor; its deploy folder is `--root`, else the one `deploy bootstrap` recorded, so a
    command printed by `deploy status` works as printed."""
    from ..deploy.supervisor import Supervisor

    handle = open_project(project)
    recorded = handle.meta.settings.deploy_root
    return Supervisor(handle, config, root if root is not None else Path(recorded) if recorded else None)


@app.command()
def bootstrap(
    commit: Annotated[str, typer.Argument(help="The commit to serve first (e.g. HEAD).")],
    public_port: PortOpt = 8780,
    worker: Annotated[bool, typer.Option("--worker/--no-worker", help="Instances run a Prefect worker too.")] = False,
    project: ProjectOpt = None,
    root: RootOpt = None,
) -> None:
    """Start the first live instance and the proxy in front of it."""
    state = _supervisor(project, root, _config(public_port, worker=worker)).bootstrap(commit)
    typer.echo(f"live {state.live.commit[:12]} on 127.0.0.1:{state.live.port} (PID {state.live.pid}); "
               f"public 127.0.0.1:{state.proxy.public_port} (haproxy PID {state.proxy.pid})")  # fmt: skip


@app.command()
def stage(
    commit: Annotated[str, typer.Argument(help="A merged commit of GraphLemon's repository.")],
    public_port: PortOpt = 8780,
    window: Annotated[float | None, typer.Option(help="Monitoring window, seconds (default 300).")] = None,
    interval: Annotated[float | None, typer.Option(help="Seconds between two readings of the signals.")] = None,
    threshold: Annotated[
        float | None, typer.Option(help="VALIDATOR_RATE_DEVIATION_THRESHOLD (default 0.2).")
    ] = None,
    canary_engine: Annotated[
        str, typer.Option(help="How the canary runs the snake demo: prefect (a flow run) or direct (no Prefect).")
    ] = "prefect",
    prefect: Annotated[bool, typer.Option("--prefect/--no-prefect", help="Run as the deploy-supervisor flow.")] = True,
    project: ProjectOpt = None,
    root: RootOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Deploy COMMIT: stage -> health check (endpoint + canary) -> cutover -> monitor -> finalize, or roll back."""
    config = _config(public_port, window, interval, threshold, canary_engine=canary_engine)
    sup = _supervisor(project, root, config)
    commit = sup.check_stage(commit)  # refused (unknown commit, no live instance, one running) before any flow starts
    if prefect:
        from graphlemon.flows.deploy_supervisor import deploy_supervisor

        result = deploy_supervisor(project=str(sup.project.root), commit=commit, root=str(sup.root),
                                   config=config.model_dump(mode="json"))  # fmt: skip
        dep = sup.book.get(result["deployment_id"])
    else:
        dep = sup.deploy(commit)
    _show(sup, as_json, dep.deployment_id)
    if dep.status != "finalized":
        raise typer.Exit(1)


@app.command()
def merged(
    task_id: Annotated[str, typer.Argument(help="A finished DevLoop task of this self-hosted repository.")],
    prefect: Annotated[bool, typer.Option("--prefect/--no-prefect", help="Run as the deploy-supervisor flow.")] = True,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Deploy the merge TASK_ID left, with the bootstrap's settings (what the devloop does by itself when a task of
    GraphLemon's own repository ends done and merged). Owed no deploy: says why, exit 0."""
    from ..deploy.self_deploy import deploy_merged, pending_self_deploy, why_no_deploy

    handle = open_project(project)
    target = pending_self_deploy(handle, task_id)
    if target is None:
        typer.echo(f"nothing to deploy for {task_id}: {why_no_deploy(handle, task_id)}")
        return
    if prefect:
        from graphlemon.flows.deploy_supervisor import deploy_merge

        deploy_merge(handle, task_id)
    else:
        deploy_merged(handle, task_id)
    sup = _supervisor(handle.root, Path(target.root), None)
    _show(sup, as_json)
    if sup.book.latest().status != "finalized":
        raise typer.Exit(1)


@app.command()
def status(project: ProjectOpt = None, root: RootOpt = None, as_json: JsonOpt = False) -> None:
    """The latest deployment: its state, timeline, signals; the live instance; and every deployment that needs a
    person (a failed rollback), with the command to run."""
    _show(_supervisor(project, root, None), as_json)


@app.command()
def rollback(
    deployment_id: Annotated[
        str | None, typer.Argument(help="Default: the deployment that needs a person, else the latest.")
    ] = None,
    start_timeout: Annotated[
        float, typer.Option(help="Seconds a restarted previous instance has to answer /healthz.")
    ] = 60,
    project: ProjectOpt = None,
    root: RootOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Put the previous instance back behind the proxy, stop the candidate, revert its commit, file a bug."""
    from ..deploy.supervisor import DeployConfig

    sup = _supervisor(project, root, DeployConfig(start_timeout_s=start_timeout))
    dep = sup.rollback(deployment_id, by="human")
    _show(sup, as_json, dep.deployment_id)
    if dep.status != "rolled_back":
        if not as_json:
            typer.echo(f"error: the rollback of {dep.deployment_id} did not complete ({dep.status})", err=True)
        raise typer.Exit(1)


@app.command()
def down(project: ProjectOpt = None, root: RootOpt = None) -> None:
    """Stop the proxy and every instance the supervisor started."""
    _supervisor(project, root, None).shutdown()
    typer.echo("proxy and instances stopped")


def _show(sup, as_json: bool, deployment_id: str | None = None) -> None:
    from ..deploy.supervisor import status_report

    report = status_report(sup, deployment_id)
    if as_json:
        emit_json(report)
        return
    out = console()
    state, dep = report["state"], report["deployment"]
    live = state.get("live")
    if live:
        out.print(line(("live ", "bold"), f"{live['commit'][:12]} on 127.0.0.1:{live['port']} (PID {live['pid']})",
                       f", public 127.0.0.1:{state['proxy']['public_port']}" if state.get("proxy") else ""))  # fmt: skip
    else:
        out.print("no live instance (run `graphlemon deploy bootstrap COMMIT`)")
    if dep is None:
        out.print("no deployment yet")
        return
    style = {"finalized": "green", "rolled_back": "yellow", "blocked_pending_human": "red bold"}.get(dep["status"], "")
    out.print(line(("deployment ", "bold"), dep["deployment_id"], " of ", (dep["commit"] or "?")[:12], ": ",
                   (dep["status"], style)))  # fmt: skip
    if dep.get("task_id"):
        out.print(line("  the merge of DevLoop task ", dep["task_id"], ", deployed with no person (self-hosted)"))
    for entry in dep["timeline"]:
        took = f" ({entry['duration_ms']} ms)" if entry.get("duration_ms") is not None else ""
        out.print(line(f"  {entry['ts'][11:23]}  ", (f"{entry['status']:<24}", "cyan"), f"{entry['by']}{took}  ",
                       entry.get("note") or ""))  # fmt: skip
    latest: dict = {}
    for sig in report["signals"]:
        latest[(sig["phase"], sig["signal"])] = sig
    for (phase, name), sig in latest.items():
        verdict = ("ok", "green") if sig["ok"] else ("ANOMALY", "red")
        if sig.get("judged") is False:
            verdict = ("no data", "yellow")
        out.print(line(f"  {phase:<12} {name:<24} ", verdict, f"  {sig['detail']}"))
    if report.get("signals_lacking_data"):
        out.print(line(("  not judged all window (too few samples, so they could not fire): ", "yellow"),
                       ", ".join(report["signals_lacking_data"])))  # fmt: skip
    if report["what_to_do"]:
        out.print(line(("what to do: ", "red bold"), report["what_to_do"]))
    others = [d for d in report["needs_person"] if d["deployment_id"] != dep["deployment_id"]]
    for other in others:
        out.print(line(("needs a person: ", "red bold"), other["deployment_id"], " of ", (other["commit"] or "?")[:12],
                       " is ", (other["status"], "red bold"), f" - {other['what_to_do'] or ''}"))  # fmt: skip
