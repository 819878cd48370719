"""Render a Report as JSON, CSV, markdown or rich tables (cells made JSON-safe in one place)."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable
from datetime import date, datetime
from typing import Any

import numpy as np
import pandas as pd

from .report import Report

DEFAULT_LIMIT = 50  # rows shown per section in tables and markdown (0 = all)


def json_value(value: Any) -> Any:
    """A DataFrame cell as plain JSON: lists, ISO-8601 UTC timestamps, None for missing."""
    if isinstance(value, np.ndarray | list | tuple):
        return [json_value(v) for v in value]
    if isinstance(value, dict):
        return {k: json_value(v) for k, v in value.items()}
    if value is None or value is pd.NaT or value is pd.NA:
        return None
    if isinstance(value, pd.Timestamp | datetime):
        return value.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    columns = list(frame.columns)
    return [
        {c: json_value(v) for c, v in zip(columns, row, strict=True)}
        for row in frame.itertuples(index=False, name=None)
    ]


def to_json(report: Report, section: str | None = None) -> str:
    names = [section] if section else list(report.sections)
    doc = {
        "report": report.name,
        "title": report.title,
        "generated_at": json_value(report.generated_at),
        "filters": report.filters.model_dump(mode="json", exclude_none=True),
        "sections": {name: records(report.section(name)) for name in names},
    }
    return json.dumps(doc, ensure_ascii=False)


def to_csv(frame: pd.DataFrame) -> str:
    """One table; list cells are JSON arrays, timestamps ISO-8601."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(frame.columns)
    for row in records(frame):
        writer.writerow("" if v is None else json.dumps(v) if isinstance(v, list | dict) else v for v in row.values())
    return out.getvalue()


def cell_text(value: Any) -> str:
    """A short human form of a cell for tables and markdown."""
    if isinstance(value, pd.Timestamp | datetime) and value is not pd.NaT:
        return value.strftime("%Y-%m-%d %H:%M")
    value = json_value(value)
    if value is None:
        return "-"
    if isinstance(value, list):
        if value and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value):
            return " → ".join(cell_text(v) for v in value)
        return ", ".join(cell_text(v) for v in value) or "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.0f}" if abs(value) >= 1_000 else f"{value:.4g}"
    if isinstance(value, int):
        return f"{value:,}" if abs(value) >= 1_000 else str(value)
    return str(value)


def _shown(frame: pd.DataFrame, limit: int) -> tuple[pd.DataFrame, int]:
    if limit and len(frame) > limit:
        return frame.head(limit), len(frame) - limit
    return frame, 0


def _filters_line(report: Report) -> str:
    active = report.filters.model_dump(mode="json", exclude_none=True)
    return ", ".join(f"{k}={v}" for k, v in active.items()) or "none"


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(frame: pd.DataFrame, limit: int = DEFAULT_LIMIT) -> str:
    if frame.empty:
        return "_(no rows)_\n"
    shown, more = _shown(frame, limit)
    lines = ["| " + " | ".join(map(str, shown.columns)) + " |", "|" + "---|" * len(shown.columns)]
    for row in shown.itertuples(index=False, name=None):
        lines.append("| " + " | ".join(_md_escape(cell_text(v)) for v in row) + " |")
    if more:
        lines.append(f"\n_… {more} more row(s); `--json` or `--csv` prints all._")
    return "\n".join(lines) + "\n"


def to_markdown(report: Report, section: str | None = None, limit: int = DEFAULT_LIMIT) -> str:
    names: Iterable[str] = [section] if section else report.sections
    parts = [
        f"# {report.title} report\n",
        f"Generated {cell_text(report.generated_at)} UTC; filters: {_filters_line(report)}.\n",
    ]
    for name in names:
        frame = report.section(name)
        parts.append(f"## {name} ({len(frame)})\n")
        parts.append(markdown_table(frame, limit))
    return "\n".join(parts)


def print_frame(
    console: Any,
    frame: pd.DataFrame,
    title: str,
    limit: int = DEFAULT_LIMIT,
    columns: list[str] | None = None,
    wide: bool = False,
    task_ids: Iterable[str] = (),
) -> None:
    """One DataFrame as a rich table that fits the console (at most `limit` rows, 0 = all): `columns` first, then
    the others while they fit (`wide`: all); task ids shortened to their unique prefix among `task_ids` and the
    frame's own (graphlemon/cli/fit.py)."""
    from rich.text import Text

    from graphlemon.cli.fit import Col, print_fitted, unique_prefixes

    if frame.empty:
        console.print(Text(f"{title}: no rows"), highlight=False)
        return
    shown, more = _shown(frame, limit)
    names = [str(c) for c in shown.columns]
    ids = [*task_ids, *(v for v in shown["task_id"] if isinstance(v, str))] if "task_id" in names else []
    short = unique_prefixes(ids)
    rows = [
        [Text(short.get(v, cell_text(v)) if n == "task_id" and isinstance(v, str) else cell_text(v))
         for n, v in zip(names, row, strict=True)]
        for row in shown.itertuples(index=False, name=None)
    ]  # fmt: skip
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
    task_ids: Iterable[str] = (),
) -> None:
    from rich.text import Text

    console.print(
        Text.assemble((f"{report.title} report", "bold"), f"  filters: {_filters_line(report)}"), highlight=False
    )
    for name in [section] if section else report.sections:
        frame = report.section(name)
        print_frame(console, frame, f"{name} ({len(frame)})", limit, report.brief.get(name), wide, task_ids)
