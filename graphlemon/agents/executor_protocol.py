"""The Executor seam: one call runs one role turn (what crosses it: executor_seam.py)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ..models import ExecutorName
from .executor_seam import AgentRequest, AgentResult
from .tool_context import ToolContext


@runtime_checkable
class Executor(Protocol):
    """Runs one role turn. Backends: ScriptedExecutor, AnthropicExecutor, ClaudeCodeExecutor."""

    name: ExecutorName

    def run(self, request: AgentRequest, ctx: ToolContext) -> AgentResult: ...
