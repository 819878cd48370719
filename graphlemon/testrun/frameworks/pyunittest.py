"""unittest: `python -m unittest` (discovery, or the given modules / names); its text is the report."""

from __future__ import annotations

import re

from ..parsers.unittest_text import parse_unittest_text
from ..python_env import python_for
from ..result_models import ParsedRun
from .framework import Framework, Invocation, RunRequest


class Unittest(Framework):
    name = "unittest"
    no_tests_pattern = re.compile(r"^Ran 0 tests", re.M)

    def invocation(self, request: RunRequest) -> Invocation:
        argv = [python_for(request.run_dir), "-m", "unittest"]
        selected = request.rerun or [_module_of(p) for p in request.targets.paths]
        if request.targets.patterns and not request.rerun:
            argv += [arg for pattern in request.targets.patterns for arg in ("-k", pattern)]
        return Invocation(argv + selected if selected else [*argv, "discover"])

    def parse(self, report: str | None, output: str) -> ParsedRun:
        return parse_unittest_text(output)


def _module_of(path: str) -> str:
    """`tests/test_x.py` → `tests.test_x`, a node id `tests/test_x.py::Case::test_a` → `tests.test_x.Case.test_a`
    (unittest takes dotted names; folders are discovered)."""
    file, _, rest = path.partition("::")
    if file.endswith(".py"):
        return ".".join([file[:-3].replace("/", "."), *(part for part in rest.split("::") if part)])
    return path
