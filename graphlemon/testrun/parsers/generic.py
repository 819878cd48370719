"""Output of an unknown command: try every framework's text parser, keep the first that finds tests.

Also reads the plain closing line `N passed, N failed[, N skipped]` that any runner may print.
"""

from __future__ import annotations

import re

from ...test_counts import TestSummary
from ..result_models import ParsedRun
from .jest_text import parse_jest_text
from .mocha_text import parse_mocha_text
from .node_text import parse_node_text
from .pytest_text import parse_pytest_text
from .tap import parse_tap
from .unittest_text import parse_unittest_text
from .vitest_text import parse_vitest_text

_PLAIN = re.compile(
    r"^(?:\w+: )?(?P<passed>\d+) passed, (?P<failed>\d+) failed(?:, (?P<skipped>\d+) skipped)?\s*$", re.M
)


def parse_plain_counts(output: str) -> ParsedRun:
    found = list(_PLAIN.finditer(output))
    if not found:
        return ParsedRun()
    last = found[-1]
    passed, failed, skipped = int(last["passed"]), int(last["failed"]), int(last["skipped"] or 0)
    return ParsedRun(
        source="text",
        counts=TestSummary(total=passed + failed + skipped, passed=passed, failed=failed, skipped=skipped),
    )


# most specific markers first: vitest's and jest's summaries, mocha's `passing`, TAP, node's spec,
# unittest's `Ran N tests`, pytest's `====`
TEXT_PARSERS = (
    ("vitest", parse_vitest_text),
    ("jest", parse_jest_text),
    ("mocha", parse_mocha_text),
    ("tap", parse_tap),
    ("node:test", parse_node_text),
    ("unittest", parse_unittest_text),
    ("pytest", parse_pytest_text),
    ("plain", parse_plain_counts),
)
_SAME_PARSER = {"tape": "tap"}


def parse_any_text(output: str, prefer: list[str] | None = None) -> ParsedRun:
    """The first parser that finds tests; those of the runners in `prefer` (the ones actually
    invoked) first, so another runner's look-alike lines (jest's and mocha's `✓`) cannot claim them."""
    wanted = [_SAME_PARSER.get(r, r) for r in prefer or []]
    ordered = sorted(TEXT_PARSERS, key=lambda item: wanted.index(item[0]) if item[0] in wanted else len(wanted))
    for _name, parser in ordered:
        parsed = parser(output)
        if parsed.found:
            return parsed
    return ParsedRun()
