"""Tools given to agents: plain functions with a JSON schema, sandboxed, callable from every backend."""

from .registry import REGISTRY, Tool, ToolOutcome, register_tool, tool
from .toolbox import call_tool, get_tool, tool_names, tool_specs

__all__ = [
    "REGISTRY",
    "Tool",
    "ToolOutcome",
    "call_tool",
    "get_tool",
    "register_tool",
    "tool",
    "tool_names",
    "tool_specs",
]
