"""The tool registry: each tool is a plain function `fn(ctx, args)` with a pydantic args model, registered by
`@tool` when its module is imported (the built-in ones: toolbox.py, which looks them up and calls them).

The args model gives the JSON schema the LLM backends advertise and validates every call, from any backend.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, get_type_hints

from pydantic import BaseModel

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
