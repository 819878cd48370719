"""Output of an unknown command: try every framework's text parser, keep the first that finds tests.

Also reads the plain closing line `N passed, N failed[, N skipped]` that any runner may print.
"""

from __future__ import annotations

import re

from ...models import TestSummary
from ..models import ParsedRun
from .jest_text import parse_jest_text
from .mocha_text import parse_mocha_text
from .node_text import parse_node_text
from .pytest_text import parse_pytest_text
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


# most specific markers first: vitest's and jest's summaries, mocha's `passing`, node's TAP/spec, pytest's `====`
TEXT_PARSERS = (
    parse_vitest_text,
    parse_jest_text,
    parse_mocha_text,
    parse_node_text,
    parse_pytest_text,
    parse_plain_counts,
)


def parse_any_text(output: str) -> ParsedRun:
    for parser in TEXT_PARSERS:
        parsed = parser(output)
        if parsed.found:
            return parsed
    return ParsedRun()
