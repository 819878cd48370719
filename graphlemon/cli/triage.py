"""`graphlemon triage --run RUN_ID`: triage a failed integration run with the BugTriager (docs/triage.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ._common import JsonOpt, ProjectOpt, console, emit_json, line, open_project

EXECUTOR_CHOICES = ("auto", "none", "scripted", "anthropic", "claude_code")
MODEL_BACKENDS = ("anthropic", "claude_code")


def register(app: typer.Typer) -> None:
    @app.command()
    def triage(
        run: Annotated[
            str, typer.Option("--run", help="The integration run id (a folder under .graphlemon/integration/runs/).")
        ],
        executor: Annotated[
            str,
            typer.Option(
                help="auto (default): the bug-triager agent when GRAPHLEMON_EXECUTOR names a model backend (anthropic / claude_code), else the rules; none: the rules (no model); scripted / anthropic / claude_code: the agent proposes, the self-check verifies."
            ),
        ] = "auto",
        playbook: Annotated[Path | None, typer.Option(help="Playbook YAML for --executor scripted.")] = None,
        project: ProjectOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Triage a failed integration run into contract_mismatch / impl_bug / spec_ambiguous / infra_flake.

        Writes .graphlemon/integration/runs/RUN/triage.json (an older one moves to history/) and one
        triage ledger record; prints the TriagerOutput merged with the triage.json fields.
        """
        from ..errors import invalid_param
        from ..triage import triage_run

        if executor not in EXECUTOR_CHOICES:
            raise invalid_param(f"unknown executor {executor!r}; choose one of: {', '.join(EXECUTOR_CHOICES)}")
        if playbook is not None and executor != "scripted":
            raise invalid_param("--playbook is only for --executor scripted")
        handle = open_project(project)
        if executor == "auto":
            from ..agents.settings import AgentSettings

            configured = AgentSettings.from_env().backend
            executor = configured if configured in MODEL_BACKENDS else "none"
        backend = None
        if executor != "none":
            from ..agents import build_executor

            backend = build_executor(executor, playbook=playbook)
        outcome = triage_run(handle, run, executor=backend)
        if as_json:
            emit_json(outcome.merged())
            return
        _print(outcome)


def _print(outcome) -> None:
    out = console()
    out.soft_wrap = True
    r, o = outcome.record, outcome.output
    flag = "" if o.ok else "  (fallback: the proposal failed its self-check)"
    out.print(line((r.category, "bold"), f"  confidence {r.confidence:.2f}  run {r.run_id}{flag}"), highlight=False)
    out.print(f"root cause: {r.root_cause}", markup=False, highlight=False)
    out.print(f"affected units: {', '.join(r.affected_units) or '-'}", markup=False)
    out.print(
        f"will_auto_apply: {str(r.will_auto_apply).lower()}   evidence_verified: {str(r.evidence_verified).lower()}   executor: {r.executor}   method: {o.method}",
        markup=False,
    )
    if r.proposed_sdd_patch:
        p = r.proposed_sdd_patch
        out.print(f"proposed SDD patch ({p.op} {p.target_section}): {p.text}", markup=False, highlight=False)
    if r.l3_question:
        out.print(f"question for a person: {r.l3_question}", markup=False, highlight=False)
    out.print("evidence:")
    for item in r.evidence:
        out.print(f"  {item}", markup=False, highlight=False)
    for hint in outcome.hints:
        out.print(f"hint: {hint}", markup=False, highlight=False)
    out.print(f"triage.json: {r.triage_ref}", markup=False)
