"""A Report's file formats: JSON, CSV and markdown (cells made JSON-safe in one place). The terminal's tables are the
CLI's (`graphlemon/cli/frames.py`)."""

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


def shown_rows(frame: pd.DataFrame, limit: int) -> tuple[pd.DataFrame, int]:
    if limit and len(frame) > limit:
        return frame.head(limit), len(frame) - limit
    return frame, 0


def filters_line(report: Report) -> str:
    active = report.filters.model_dump(mode="json", exclude_none=True)
    return ", ".join(f"{k}={v}" for k, v in active.items()) or "none"


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(frame: pd.DataFrame, limit: int = DEFAULT_LIMIT) -> str:
    if frame.empty:
        return "_(no rows)_\n"
    shown, more = shown_rows(frame, limit)
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
        f"Generated {cell_text(report.generated_at)} UTC; filters: {filters_line(report)}.\n",
    ]
    for name in names:
        frame = report.section(name)
        parts.append(f"## {name} ({len(frame)})\n")
        parts.append(markdown_table(frame, limit))
    return "\n".join(parts)
