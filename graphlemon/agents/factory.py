"""Build executors and requests, and run one turn: the entry points stages and the CLI call."""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel

from ..errors import invalid_param
from ..project import ProjectHandle
from ..redact import Redactor
from ..skills import render_skill, render_text
from .executor_protocol import Executor
from .executor_seam import ID_PATTERN, AgentRequest, AgentResult, Limits, SandboxPolicy
from .memory import render_memory
from .roles import role_spec, writable_globs
from .settings import AgentSettings
from .tool_context import ToolContext

EXECUTORS = ("scripted", "anthropic", "claude_code")


def build_executor(name: str, *, playbook: Path | str | None = None, settings: AgentSettings | None = None) -> Executor:
    """A backend by name: `scripted` (needs a playbook), `anthropic`, `claude_code`."""
    settings = settings or AgentSettings.from_env()
    if name == "scripted":
        from .scripted import ScriptedExecutor

        path = playbook or settings.playbook
        if path is None:
            raise invalid_param("the scripted executor needs a playbook (--playbook FILE or GRAPHLEMON_PLAYBOOK)")
        return ScriptedExecutor.from_file(path)
    if name == "anthropic":
        from .anthropic_backend import AnthropicExecutor

        return AnthropicExecutor(settings)
    if name == "claude_code":
        from .claude_code import ClaudeCodeExecutor

        return ClaudeCodeExecutor(settings)
    raise invalid_param(f"unknown executor {name!r}; choose one of: {', '.join(EXECUTORS)}")


def check_executor(name: str, *, playbook: Path | str | None = None, settings: AgentSettings | None = None) -> None:
    """Refuse (INVALID_PARAM) a backend that cannot run a turn: no playbook, no API key, no `claude` on PATH;
    claude_code where its sandbox cannot be made (EXECUTOR_ERROR, testrun/confine.py).
    Called before a task is created, so a misconfigured run writes nothing."""
    settings = settings or AgentSettings.from_env()
    build_executor(name, playbook=playbook, settings=settings)
    if name == "claude_code" and shutil.which(settings.claude_bin) is None:
        raise invalid_param(
            f"the claude_code executor needs the Claude Code CLI: {settings.claude_bin!r} is not on PATH "
            "(install it, or set GRAPHLEMON_CLAUDE_BIN)"
        )
    if name == "claude_code":
        from ..testrun import confine

        confine.sandbox_for(confine.AgentProcessConfinement(workdir=Path.cwd()))  # refused where it cannot be confined


def build_request(
    project: ProjectHandle,
    role: str,
    *,
    context: str | Mapping[str, str],
    unit_id: str | None = None,
    run_id: str | None = None,
    task_id: str | None = None,
    node_exec_id: str | None = None,
    attempt: int = 1,
    workdir: Path | None = None,
    writable: list[str] | None = None,
    tools: list[str] | None = None,
    output_model: type[BaseModel] | None = None,
    model: str | None = None,
    limits: Limits | None = None,
    skill_vars: Mapping[str, object] | None = None,
    settings: AgentSettings | None = None,
    skill_commit: str | None = None,
    documents: Mapping[str, str] | None = None,
) -> AgentRequest:
    """A role turn with the role's skill, memory, default tools and sandbox, ready for any executor.
    `skill_commit`: render the skill from the project's skills repository at that commit (REQ-08).
    `documents`: texts every unit of the task shares (the SDD, ...), kept apart from the per-unit `context`
    so the backends can cache them once for all units."""
    spec = role_spec(role)
    for label, value in (
        ("unit_id", unit_id),
        ("run_id", run_id),
        ("task_id", task_id),
        ("node_exec_id", node_exec_id),
    ):
        if value is not None and not re.match(ID_PATTERN, value):
            raise invalid_param(f"{label} {value!r} must be letters, digits, '.', '_' or '-' (at most 128)")
    workdir = Path(workdir or project.root).resolve()
    if not workdir.is_dir():
        raise invalid_param(f"workdir {workdir} is not a folder")
    variables = {
        "role": role,
        "unit_id": unit_id,
        "run_id": run_id,
        "task_id": task_id,
        "attempt": attempt,
        **(skill_vars or {}),
    }
    memory = render_memory(project.state_dir, role)
    if skill_commit is None and task_id is not None:  # a task's turns render the skills its task pinned (REQ-08)
        from ..skills.repo import pinned_commit

        skill_commit = pinned_commit(project.ledger, task_id)
    if skill_commit is None:
        system = render_skill(role, variables)
    else:
        from ..skills.repo import SkillRepo

        system = render_text(SkillRepo(project.state_dir).text_at(role, skill_commit), variables)
    prompt = context if isinstance(context, str) else "\n\n".join(f"## {k}\n\n{v.strip()}" for k, v in context.items())
    if not prompt.strip():
        raise invalid_param("the turn's context (prompt) is empty")
    settings = settings or AgentSettings.from_env()
    return AgentRequest(
        role=role,  # type: ignore[arg-type]
        system=system,
        prompt=prompt,
        documents={k: v for k, v in (documents or {}).items() if v and v.strip()},
        memory=memory,
        workdir=workdir,
        sandbox=SandboxPolicy(
            root=workdir,
            writable=writable if writable is not None else writable_globs(role, unit_id=unit_id, run_id=run_id),
        ),
        tools=list(tools if tools is not None else spec.tools),
        output_model=output_model,
        model=model,
        task_id=task_id,
        node_exec_id=node_exec_id,
        unit_id=unit_id,
        run_id=run_id,
        attempt=attempt,
        skill_commit=skill_commit,
        limits=limits or Limits(max_turns=settings.max_turns_for(role), timeout_s=settings.turn_timeout_s),
    )


def run_turn(project: ProjectHandle, request: AgentRequest, executor: Executor) -> AgentResult:
    """Run one role turn with a fresh ToolContext (secrets the executor knows are redacted everywhere)."""
    secrets = getattr(executor, "secrets", ())
    ctx = ToolContext.for_request(project, request, Redactor(secrets))
    return executor.run(request, ctx)
