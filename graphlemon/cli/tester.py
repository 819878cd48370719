"""`graphlemon tester run`: one Tester stage for one unit, printing the TesterOutput (docs/tester.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ._common import JsonOpt, ProjectOpt, console, emit_json, line, open_project, seconds

app = typer.Typer(help="The Tester stage (loop L1): write tests, run them, hints, bugs.", no_args_is_help=True)


@app.command("run")
def run(
    unit: Annotated[str, typer.Option("--unit", help="Unit id from .graphlemon/units.json.")],
    mode: Annotated[str, typer.Option(help="test (first run), retry (re-run after a fix) or resume")] = "test",
    executor: Annotated[str, typer.Option(help="scripted, anthropic, claude_code, or none (re-run existing tests)")] = "scripted",
    playbook: Annotated[Path | None, typer.Option(help="Playbook for the scripted executor.")] = None,
    attempt: Annotated[int, typer.Option(min=1, help="Attempt number (the playbook is keyed by it).")] = 1,
    resume_token: Annotated[str | None, typer.Option(help="resume: the run_id of the interrupted run")] = None,
    timeout: Annotated[float, typer.Option(min=1, callback=seconds(86_400), help="Test run cap in seconds (seed: 60).")] = 60.0,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Run the Tester stage for one unit and print its TesterOutput (exit 0 green, 1 not green or not accepted)."""
    from ..errors import invalid_param
    from ..stages.tester import run_tester

    if mode not in ("test", "retry", "resume"):
        raise invalid_param(f"unknown mode {mode!r}; choose test, retry or resume")
    handle = open_project(project)
    built = None
    if executor != "none":
        from ..agents import build_executor

        built = build_executor(executor, playbook=playbook)
    out = run_tester(
        handle, unit, executor=built, mode=mode, attempt=attempt, resume_token=resume_token, timeout_s=timeout  # type: ignore[arg-type]
    )
    if as_json:
        emit_json(out.model_dump(mode="json", by_alias=True))
    else:
        _show(out)
    raise typer.Exit(0 if out.ok and out.accepted else 1)


def _show(out) -> None:
    from rich.table import Table

    c = console()
    verdict = ("green", "green") if out.ok else (("crashed", "red") if out.crashed else ("red", "red"))
    label = f" ({out.executor} executor)" if out.executor != "none" else ""
    c.print(line(f"{out.unit_id} {out.run_id}: ", verdict, f"  {out.summary.passed}/{out.summary.total} passed{label}"))
    c.print(f"coverage: acceptance {out.acceptance_coverage:.0%}, contract {out.contract_coverage:.0%}; next: {out.next_action}")
    if out.failures:
        table = Table("test", "expected", "got", "hint", "bug")
        for f in out.failures:
            table.add_row(f.test, str(f.expected), str(f.got), f.hint, f.bug_id or "")
        c.print(table)
    for b in out.bugs_transitioned:
        c.print(f"bug {b.id}: {b.from_} -> {b.to}")
    for v in out.self_check_violations:
        c.print(line(("self-check:", "yellow"), f" {v}"))
    c.print(f"result: {out.result_ref}")
