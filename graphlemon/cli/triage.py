"""`graphlemon triage --run RUN_ID`: triage a failed integration run with the BugTriager (docs/triage.md)."""

from __future__ import annotations

import unicodedata
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

    @app.command("approve-patch")
    def approve_patch(
        run: Annotated[
            str | None, typer.Option("--run", help="The integration run whose SDD patch to approve.")
        ] = None,
        show: Annotated[bool, typer.Option("--show", help="Print the diff only; change nothing.")] = False,
        project: ProjectOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Approve a contract_mismatch's SDD patch that waits for a person (the console's approval page does the same).

        Without --run: list the patches that wait. With --run: print the diff and write the patched SDD as a new
        version (with --show: only print the diff). A patch is approved once.
        """
        from ..stages.patch_approval import approve, pending_patches, preview

        handle = open_project(project)
        if run is None:
            waiting = pending_patches(handle)
            if as_json:
                emit_json({"pending": [p.model_dump(mode="json") for p in waiting]})
                return
            for p in waiting:
                console().print(
                    plain(f"{p.run_id}  {', '.join(p.units)}  {p.review or ''}"), markup=False, highlight=False
                )
            if not waiting:
                console().print("no SDD patch waits for a person", markup=False)
            return
        shown = preview(handle, run)
        approved = None if show else approve(handle, run, by="cli")
        if as_json:
            emit_json(
                {**shown.model_dump(mode="json"), "approved": approved.artifact_id if approved else shown.approved}
            )
            return
        out = console()
        out.print(plain(shown.diff or f"(no diff: {shown.problem})"), markup=False, highlight=False)
        if approved is not None:
            out.print(f"approved: the SDD is now {approved.artifact_id} ({approved.path})", markup=False)


def plain(text: str) -> str:
    """Text as text: control and bidi characters shown as U+XXXX (newlines and tabs kept)."""
    return "".join(
        f"<U+{ord(c):04X}>" if unicodedata.category(c) in ("Cc", "Cf", "Co", "Cs") and c not in "\n\t" else c
        for c in text
    )


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
