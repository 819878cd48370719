"""The framework variants, by canonical name, and how to recognise one in a custom command."""

from __future__ import annotations

import re
from importlib import import_module

from ..result_models import FrameworkName
from .framework import Framework, Invocation, RunRequest

# name → (module, class); imported on first use so one run loads only its own parsers
_VARIANTS: dict[str, tuple[str, str]] = {
    "pytest": ("pytest", "Pytest"),
    "unittest": ("pyunittest", "Unittest"),
    "vitest": ("js", "Vitest"),
    "jest": ("js", "Jest"),
    "mocha": ("js", "Mocha"),
    "node": ("node", "NodeTest"),
    "npm-test": ("node", "NpmTest"),
    "go": ("native", "GoTest"),
    "cargo": ("native", "CargoTest"),
}

# a custom command names its runner; checked in this order
_COMMAND_HINTS: tuple[tuple[re.Pattern[str], FrameworkName], ...] = (
    (re.compile(r"\bpytest\b|\bpy\.test\b"), "pytest"),
    (re.compile(r"\bpython[\d.]*\s+(?:-\S+\s+)*-m\s+unittest\b"), "unittest"),
    (re.compile(r"\bvitest\b"), "vitest"),
    (re.compile(r"\bjest\b"), "jest"),
    (re.compile(r"\bmocha\b"), "mocha"),
    (re.compile(r"\bnode\b.*--test\b"), "node"),
    (re.compile(r"\bgo\s+test\b"), "go"),
    (re.compile(r"\bcargo\s+(?:test|t)\b"), "cargo"),
    (re.compile(r"\bnpm\s+(?:test|t|run(?:-script)?\s+[\w:.-]+)\b|\bnpm\s+t\b"), "npm-test"),
)


def get_framework(name: FrameworkName) -> Framework:
    module, cls = _VARIANTS[name]
    return getattr(import_module(f"{__name__}.{module}"), cls)()


def framework_of_command(command: str) -> FrameworkName | None:
    for pattern, name in _COMMAND_HINTS:
        if pattern.search(command):
            return name
    return None


__all__ = ["Framework", "Invocation", "RunRequest", "framework_of_command", "get_framework"]
