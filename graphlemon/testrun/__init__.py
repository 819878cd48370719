"""Structured test runner: one call, any framework, a compact truthful result (docs/testrun.md).

    from graphlemon.testrun import run_tests
    result = run_tests(Path("repo"), ["tests/test_api.py"], timeout=60)
    result.ok, result.summary, result.failures[0].hint, result.cases

Frameworks: pytest, vitest, jest, mocha, node (node:test), npm-test, go, cargo.
"""

from .detect import detect_framework, normalise_framework
from .result_models import FRAMEWORKS, TestCase, TestFailure, TestRunResult
from .runner import run_tests
from .summary import markdown_summary

__all__ = [
    "FRAMEWORKS",
    "TestCase",
    "TestFailure",
    "TestRunResult",
    "detect_framework",
    "markdown_summary",
    "normalise_framework",
    "run_tests",
]
