"""The built-in tools, looked up and called: every tool module is imported here (each registers its tools with
`@tool`, registry.py), so a name is known as soon as this module is.

`call_tool` never raises for a recoverable failure: a bad argument, a missing file, a sandbox refusal comes back as
an error outcome the agent sees, recorded in `ctx.tool_errors` (and a sandbox refusal as a node event). The scripted
playbook's actions go through here too.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from ...errors import ErrorCode, GraphLemonError, invalid_param
from ..tool_context import ToolContext
from . import bug_tools, evidence_tool, file_edit, file_read, patch_tool, state, testing  # noqa: F401  (they register)
from .registry import REGISTRY, Tool, ToolOutcome


def get_tool(name: str) -> Tool:
    try:
        return REGISTRY[name]
    except KeyError:
        raise invalid_param(f"unknown tool {name!r}; known tools: {', '.join(sorted(REGISTRY))}") from None


def tool_names() -> list[str]:
    return sorted(REGISTRY)


def tool_specs(names: list[str]) -> list[dict[str, Any]]:
    return [get_tool(n).spec() for n in names]


def call_tool(ctx: ToolContext, name: str, args: Any, *, allowed: list[str] | None = None) -> ToolOutcome:
    """Validate and run one tool call; failures become error outcomes (and ledger events for violations)."""
    try:
        if allowed is not None and name not in allowed:
            raise invalid_param(
                f"tool {name!r} is not available to the {ctx.role} role here; use one of: {', '.join(allowed)}"
            )
        t = get_tool(name)
        if not isinstance(args, dict):
            raise invalid_param(f"{name}: arguments must be a JSON object, got {type(args).__name__}")
        try:
            parsed = t.args_model.model_validate(args)  # what the agent writes is written as given; records are redacted
        except ValidationError as exc:
            raise invalid_param(f"{name}: invalid arguments: {_first_errors(exc)}") from None
        result = t.fn(ctx, parsed)
    except GraphLemonError as err:
        return ToolOutcome(
            ok=False,
            content=f"error[{err.code}]: {ctx.redactor.text(err.message)}",
            error=ctx.record_tool_error(name, err),
        )
    except (OSError, UnicodeError, ValueError) as exc:
        err = GraphLemonError(ErrorCode.EXECUTOR_ERROR, f"{name} failed: {type(exc).__name__}: {exc}")
        return ToolOutcome(
            ok=False,
            content=f"error[{err.code}]: {ctx.redactor.text(err.message)}",
            error=ctx.record_tool_error(name, err),
        )
    text = ctx.redactor.text(t.render(result)) if t.render is not None else None
    return ToolOutcome(ok=True, content=ctx.redactor.value(result), text=text)


def _first_errors(exc: ValidationError, limit: int = 3) -> str:
    parts = []
    for e in exc.errors()[:limit]:
        where = ".".join(str(p) for p in e.get("loc", ())) or "(root)"
        parts.append(f"{where}: {e.get('msg')}")
    return "; ".join(parts)
