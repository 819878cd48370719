"""The JSON lines of our mocha hook (`mocha_hook.js`, preloaded through NODE_OPTIONS) → cases and failures.

The hook records mocha's own runner events, so it works whatever the project's reporter,
arguments, `.mocharc`, `nyc` wrapper or `npm run` chain. A test that passed and then had a
failing `afterEach` hook is failed; a failing hook is a failed case of its own. The `end`
events carry mocha's stats: the runner's own totals, kept for reconciliation.
"""

from __future__ import annotations

from typing import Any

from ...test_counts import TestSummary
from ..output_text import to_int, to_str
from ..result_models import ParsedRun
from .common import json_lines
from .mocha_json import add_entry

_STATUS = {"pass": "passed", "pending": "skipped", "fail": "failed"}
_RANK = {"passed": 0, "skipped": 1, "failed": 2}


def parse_mocha_events(text: str) -> ParsedRun:
    run = ParsedRun(source="report")
    entries: dict[tuple[Any, str, str], tuple[dict[str, Any], str]] = {}
    stats: list[dict[str, Any]] = []
    for record in json_lines(text):
        event = record.get("event")
        if event == "end":
            if isinstance(record.get("stats"), dict):
                stats.append(record["stats"])
            continue
        status = _STATUS.get(to_str(event))
        if status is None:
            continue
        key = (
            record.get("pid"),
            to_str(record.get("file")),
            to_str(record.get("fullTitle")) or to_str(record.get("title")),
        )
        if key not in entries or _RANK[status] > _RANK[entries[key][1]]:
            entries[key] = (record, status)
    for record, status in entries.values():
        add_entry(run, record, status)
    if stats:
        run.summary_counts = _stats_counts(stats)
        run.summary_label = "mocha's run statistics"
    return run


def _stats_counts(stats: list[dict[str, Any]]) -> TestSummary:
    """mocha's totals summed over its runs (one per process that ran mocha)."""
    passed = sum(to_int(s.get("passes")) or 0 for s in stats)
    failed = sum(to_int(s.get("failures")) or 0 for s in stats)
    skipped = sum(to_int(s.get("pending")) or 0 for s in stats)
    return TestSummary(total=passed + failed + skipped, passed=passed, failed=failed, skipped=skipped)
