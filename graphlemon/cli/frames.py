"""Analytics frames and reports on the terminal: rich tables that fit the console (`fit.py`)."""

from __future__ import annotations

from typing import Any

import pandas as pd
from rich.text import Text

from graphlemon.analytics.formats import DEFAULT_LIMIT, cell_text, filters_line, shown_rows
from graphlemon.analytics.report import Report

from .fit import Col, print_fitted


def print_frame(
    console: Any,
    frame: pd.DataFrame,
    title: str,
    limit: int = DEFAULT_LIMIT,
    columns: list[str] | None = None,
    wide: bool = False,
) -> None:
    """One DataFrame as a rich table that fits the console (at most `limit` rows, 0 = all): `columns` first, then
    the others while they fit (`wide`: all); task ids whole, never cut (fit.py)."""
    if frame.empty:
        console.print(Text(f"{title}: no rows"), highlight=False)
        return
    shown, more = shown_rows(frame, limit)
    names = [str(c) for c in shown.columns]
    rows = [[Text(cell_text(v)) for v in row] for row in shown.itertuples(index=False, name=None)]
    cols = [Col(n, whole=_whole(n, shown[c])) for n, c in zip(names, shown.columns, strict=True)]
    print_fitted(
        console, title, cols, rows, wide, priority=columns or names, more="--wide, --md, --json or --csv show all"
    )
    if more:
        console.print(f"… {more} more row(s) (--limit 0 shows all)", highlight=False)


def _whole(name: str, column: pd.Series) -> bool:
    """Numbers, times, flags and ids are never wrapped; text and lists wrap at spaces."""
    kind = column.dtype.kind
    return kind in "biufmM" or name.endswith("_id") or name in ("status", "stage", "role", "model", "unit", "task")


def print_rich(
    report: Report,
    console: Any,
    section: str | None = None,
    limit: int = DEFAULT_LIMIT,
    wide: bool = False,
) -> None:
    console.print(
        Text.assemble((f"{report.title} report", "bold"), f"  filters: {filters_line(report)}"), highlight=False
    )
    for name in [section] if section else report.sections:
        frame = report.section(name)
        print_frame(console, frame, f"{name} ({len(frame)})", limit, report.brief.get(name), wide)
