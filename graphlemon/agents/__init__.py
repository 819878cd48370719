"""Agents: the Executor protocol, its backends (scripted, anthropic, claude_code), tools and sandbox.

Entry points: `build_executor(name, playbook=, settings=)`, `build_request(project, role, context=, ...)`,
`run_turn(project, request, executor) -> AgentResult`. See docs/agents.md.
"""

from .executor_protocol import Executor
from .executor_seam import (
    AgentRequest,
    AgentResult,
    Limits,
    SandboxPolicy,
    StopReason,
    ToolError,
    UsageTotals,
)
from .factory import EXECUTORS, build_executor, build_request, check_executor, run_turn
from .sandbox import Sandbox
from .settings import AgentSettings
from .tool_context import ToolContext

__all__ = [
    "EXECUTORS",
    "AgentRequest",
    "AgentResult",
    "AgentSettings",
    "Executor",
    "Limits",
    "SandboxPolicy",
    "Sandbox",
    "StopReason",
    "ToolContext",
    "ToolError",
    "UsageTotals",
    "build_executor",
    "check_executor",
    "build_request",
    "run_turn",
]
