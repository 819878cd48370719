"""The tool registry: each tool is a plain function `fn(ctx, args)` with a pydantic args model.

The args model gives the JSON schema the LLM backends advertise and validates
every call, from any backend (the scripted playbook's actions go through here
too). `call_tool` never raises for a recoverable failure: a bad argument, a
missing file, a sandbox refusal comes back as an error outcome the agent sees,
recorded in `ctx.tool_errors` (and a sandbox refusal as a node event).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, get_type_hints

from pydantic import BaseModel, ValidationError

from ...errors import ErrorCode, GraphLemonError, invalid_param
from ..context import cap_result
from ..executor_seam import ToolError
from ..schemas import model_schema
from ..tool_context import ToolContext

ToolFn = Callable[[ToolContext, Any], Any]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    args_model: type[BaseModel]
    fn: ToolFn
    render: Callable[[Any], str] | None = None  # the result as a model reads it (default: JSON)

    @property
    def input_schema(self) -> dict[str, Any]:
        return model_schema(self.args_model)

    def spec(self) -> dict[str, Any]:
        """The tool as the Messages API declares it."""
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}


@dataclass(frozen=True)
class ToolOutcome:
    ok: bool
    content: Any  # JSON-able result, or the error message
    error: ToolError | None = None
    text: str | None = None  # the tool's own rendering for a model (raw text, line numbers), when it has one

    def as_text(self) -> str:
        """What the model reads: the tool's rendering, else text as it is, anything else as JSON; capped (head and
        tail) either way."""
        if self.text is not None:
            return cap_result(self.text)
        if isinstance(self.content, str):
            return cap_result(self.content)
        return cap_result(json.dumps(self.content, ensure_ascii=False, default=str))


REGISTRY: dict[str, Tool] = {}


def tool(name: str, description: str, *, render: Callable[[Any], str] | None = None) -> Callable[[ToolFn], ToolFn]:
    """Register `fn(ctx, args: ArgsModel) -> JSON-able` under `name` (the args model is read from the hint);
    `render(result)` is the text a model reads instead of the JSON."""

    def decorate(fn: ToolFn) -> ToolFn:
        hints = get_type_hints(fn)
        args_model = hints.get("args")
        if not (isinstance(args_model, type) and issubclass(args_model, BaseModel)):
            raise TypeError(f"tool {name}: the 'args' parameter must be annotated with a pydantic model")
        register_tool(Tool(name=name, description=description, args_model=args_model, fn=fn, render=render))
        return fn

    return decorate


def register_tool(t: Tool, *, replace: bool = False) -> None:
    if t.name in REGISTRY and not replace and REGISTRY[t.name].fn is not t.fn:
        raise ValueError(f"tool {t.name!r} is already registered")
    REGISTRY[t.name] = t


def get_tool(name: str) -> Tool:
    _load_builtin_tools()
    try:
        return REGISTRY[name]
    except KeyError:
        raise invalid_param(f"unknown tool {name!r}; known tools: {', '.join(sorted(REGISTRY))}") from None


def tool_names() -> list[str]:
    _load_builtin_tools()
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


_loaded = False
_load_lock = threading.Lock()


def _load_builtin_tools() -> None:
    """Import the built-in tool modules once; threads (parallel units) wait until they are all registered."""
    global _loaded
    if _loaded:
        return
    with _load_lock:
        if not _loaded:
            from . import bug_tools, evidence_tool, file_edit, file_read, patch_tool, state, testing  # noqa: F401  (registration side effects)

            _loaded = True
