"""A short markdown rendering of a result (for Prefect artifacts and reports)."""

from __future__ import annotations

from .result_models import TestRunResult

MAX_ROWS = 50


def markdown_summary(result: TestRunResult) -> str:
    s = result.summary
    verdict = "ok" if result.ok else "NOT ok"
    flags = ", ".join(flag for flag, on in (("timed out", result.timed_out), ("crashed", result.crashed)) if on)
    lines = [
        f"**{verdict}** · {result.framework or 'unknown framework'} · exit {result.exit_code} · {result.duration_ms} ms"
        + (f" · {flags}" if flags else ""),
        "",
        f"{s.total} tests: {s.passed} passed, {s.failed} failed, {s.skipped} skipped — `{_cell(result.command)}`",
    ]
    if result.failures:
        lines += ["", "| test | where | message | hint |", "|---|---|---|---|"]
        for f in result.failures[:MAX_ROWS]:
            where = f"{f.file}:{f.line}" if f.file and f.line else (f.file or "")
            lines.append(f"| {_cell(f.name)} | {_cell(where)} | {_cell(f.message)} | {_cell(f.hint)} |")
        if len(result.failures) > MAX_ROWS:
            lines.append(f"| … {len(result.failures) - MAX_ROWS} more | | | |")
    return "\n".join(lines)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ").replace("`", "'")[:300]
