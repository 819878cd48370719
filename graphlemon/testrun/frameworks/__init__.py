"""The framework variants, by canonical name, and how to recognise one in a custom command."""

from __future__ import annotations

import re

from ..models import FrameworkName
from .base import Framework, Invocation, RunRequest
from .js import Jest, Mocha, Vitest
from .native import CargoTest, GoTest
from .node import NodeTest, NpmTest
from .pytest import Pytest

_VARIANTS: dict[str, type[Framework]] = {
    cls.name: cls for cls in (Pytest, Vitest, Jest, Mocha, NodeTest, NpmTest, GoTest, CargoTest)
}

# a custom command names its runner; checked in this order
_COMMAND_HINTS: tuple[tuple[re.Pattern[str], FrameworkName], ...] = (
    (re.compile(r"\bpytest\b|\bpy\.test\b"), "pytest"),
    (re.compile(r"\bvitest\b"), "vitest"),
    (re.compile(r"\bjest\b"), "jest"),
    (re.compile(r"\bmocha\b"), "mocha"),
    (re.compile(r"\bnode\b.*--test\b"), "node"),
    (re.compile(r"\bgo\s+test\b"), "go"),
    (re.compile(r"\bcargo\s+(?:test|t)\b"), "cargo"),
    (re.compile(r"\bnpm\s+(?:run\s+)?test\b|\bnpm\s+t\b"), "npm-test"),
)


def get_framework(name: FrameworkName) -> Framework:
    return _VARIANTS[name]()


def framework_of_command(command: str) -> FrameworkName | None:
    for pattern, name in _COMMAND_HINTS:
        if pattern.search(command):
            return name
    return None


__all__ = ["Framework", "Invocation", "RunRequest", "framework_of_command", "get_framework"]
