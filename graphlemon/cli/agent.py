"""`graphlemon agent run|tools`: one role turn end to end, and the tools agents get."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Annotated

import typer

from ..errors import invalid_param
from ._common import JsonOpt, ProjectOpt, console, emit_json, line, open_project, seconds

PRINT_MAX_CHARS = 100_000  # the printed structured output (--json prints it whole)

app = typer.Typer(help="Agent role turns (scripted, anthropic, claude_code executors).", no_args_is_help=True)


@app.command("run")
def run(
    role: Annotated[str, typer.Option("--role", help="planner, coder, tester, integrator, bug-triager or validator.")],
    executor: Annotated[
        str | None,
        typer.Option(
            "--executor", "-e", help="scripted, anthropic or claude_code (default: GRAPHLEMON_EXECUTOR or scripted)."
        ),
    ] = None,
    playbook: Annotated[
        Path | None, typer.Option("--playbook", help="Playbook YAML for the scripted executor.")
    ] = None,
    unit: Annotated[str | None, typer.Option("--unit", help="Unit id of the turn.")] = None,
    attempt: Annotated[int, typer.Option("--attempt", min=1, help="Attempt number (playbooks match on it).")] = 1,
    task: Annotated[str | None, typer.Option("--task", help="Task id (usage and budget are counted per task).")] = None,
    run_id: Annotated[
        str | None, typer.Option("--run-id", help="Run id (fills the role's runs/ sandbox path).")
    ] = None,
    prompt: Annotated[
        str | None, typer.Option("--prompt", help="The turn's context (default: a one-line summary of the ids).")
    ] = None,
    prompt_file: Annotated[
        Path | None, typer.Option("--prompt-file", help="Read the turn's context from a file.")
    ] = None,
    output_model: Annotated[
        str | None, typer.Option("--output-model", help="Validate the output with a pydantic model, as module:Class.")
    ] = None,
    model: Annotated[str | None, typer.Option("--model", help="Model for LLM executors (default: per role).")] = None,
    max_turns: Annotated[
        int | None, typer.Option("--max-turns", min=1, max=500, help="Model calls (or playbook actions) allowed.")
    ] = None,
    timeout: Annotated[
        float | None, typer.Option("--timeout", callback=seconds(86_400), help="Seconds for the whole turn.")
    ] = None,
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Run one role turn and print the AgentResult (exit 1 unless it completed with a valid output)."""
    from ..agents import EXECUTORS, AgentSettings, Limits, build_executor, build_request, run_turn

    if executor is not None and executor not in EXECUTORS:
        raise invalid_param(f"unknown executor {executor!r}; choose one of: {', '.join(EXECUTORS)}")
    handle = open_project(project)
    settings = AgentSettings.from_env(backend=executor, playbook=playbook)
    context = _context(prompt, prompt_file, role=role, unit=unit, task=task, attempt=attempt)
    limits = Limits(
        max_turns=max_turns or settings.max_turns_for(role),
        timeout_s=timeout if timeout is not None else settings.turn_timeout_s,
    )
    request = build_request(
        handle,
        role,
        context=context,
        unit_id=unit,
        run_id=run_id,
        task_id=task,
        attempt=attempt,
        output_model=_load_model(output_model) if output_model else None,
        model=model,
        limits=limits,
        settings=settings,
    )
    result = run_turn(handle, request, build_executor(settings.backend, playbook=playbook, settings=settings))
    if as_json:
        emit_json(result)
    else:
        _print(result)
    if not result.ok:
        raise typer.Exit(1)


@app.command("tools")
def tools(
    role: Annotated[str | None, typer.Option("--role", help="Only the tools this role gets by default.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """List the tools agents can call, with their JSON schemas (--json)."""
    from ..agents.roles import role_spec
    from ..agents.tools import get_tool, tool_names

    names = list(role_spec(role).tools) if role else tool_names()
    specs = [get_tool(n).spec() for n in names]
    if as_json:
        emit_json(specs)
        return
    for spec in specs:
        typer.echo(f"{spec['name']:18} {spec['description']}")


def _context(
    prompt: str | None, prompt_file: Path | None, *, role: str, unit: str | None, task: str | None, attempt: int
) -> str:
    if prompt is not None and prompt_file is not None:
        raise invalid_param("give --prompt or --prompt-file, not both")
    if prompt_file is not None:
        from ..inputs import read_text_input

        return read_text_input(prompt_file, "prompt file")
    if prompt is not None:
        return prompt
    return f"Run your {role} turn. Task: {task or '-'}. Unit: {unit or '-'}. Attempt: {attempt}."


def _load_model(spec: str):
    from pydantic import BaseModel

    module_name, _, class_name = spec.partition(":")
    if not module_name or not class_name:
        raise invalid_param(f"--output-model {spec!r}: expected module:Class")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise invalid_param(f"--output-model {spec!r}: {exc}") from None
    if not (isinstance(cls, type) and issubclass(cls, BaseModel)):
        raise invalid_param(f"--output-model {spec!r} is not a pydantic model")
    return cls


def _print(result) -> None:
    out = console()
    status = ("completed", "green") if result.ok else (str(result.stop_reason), "red")
    out.print(
        line(f"{result.role} turn via ", (result.executor, "bold"), f" ({result.model or '-'}): ", status,
             f" in {result.duration_ms} ms")
    )  # fmt: skip
    if result.output_error:
        out.print(f"output error: {result.output_error}")
    out.print(f"files changed: {', '.join(result.files_changed) or '-'}")
    if result.reverted_paths:
        out.print(f"reverted: {', '.join(result.reverted_paths)}")
    for err in result.tool_errors:
        out.print(line(("tool error", "yellow"), f" {err.tool} {err.code}: {err.message}"))
    u = result.usage
    out.print(
        f"usage: {u.calls} call(s), in {u.input_tokens}, out {u.output_tokens}, cache read {u.cache_read_tokens}, cache write {u.cache_write_tokens}, ${u.cost_usd:.4f}"
    )
    if result.output is not None:
        text = json.dumps(result.output, ensure_ascii=False, indent=2, default=str)
        if len(text) <= PRINT_MAX_CHARS:
            out.print_json(text)
        else:  # a printed answer is for reading: its head, the whole of it is in the transcript
            out.print(text[:PRINT_MAX_CHARS], markup=False, highlight=False)
            out.print(f"... output cut at {PRINT_MAX_CHARS} of {len(text)} characters", markup=False)
    out.print(f"transcript: {result.transcript_path}")
