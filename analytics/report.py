"""What every report shares: its filters, its result (named DataFrame sections), parsing `--since`."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict

from graphlemon.errors import invalid_param

ReportName = Literal["convergence", "budget", "bugs", "skills"]

_RELATIVE = re.compile(r"^(\d+(?:\.\d+)?)\s*([mhdw])$")
_UNIT_SECONDS = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


class ReportFilters(BaseModel):
    """Narrow a report. Times are UTC; `since` is inclusive, `until` exclusive; `as_of` is "now"."""

    model_config = ConfigDict(extra="forbid")

    task: str | None = None
    unit: str | None = None
    test: str | None = None
    category: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    as_of: datetime | None = None

    def sql_params(self) -> dict[str, Any]:
        """Named parameters for the report SQL (naive UTC datetimes, as the views store them)."""
        as_of = self.as_of or datetime.now(UTC)
        return {
            "task": self.task,
            "unit": self.unit,
            "test": self.test,
            "category": self.category,
            "since": _naive_utc(self.since),
            "until": _naive_utc(self.until),
            "as_of": _naive_utc(as_of),
        }


@dataclass
class Report:
    """A report: named sections (the first is the main one), each a pandas DataFrame."""

    name: ReportName
    title: str
    sections: dict[str, pd.DataFrame]
    filters: ReportFilters
    brief: dict[str, list[str]] = field(default_factory=dict)  # columns of the terminal table, per section
    generated_at: datetime = field(default_factory=lambda: datetime.now(UTC))

    def __post_init__(self) -> None:
        self.sections = {name: _settle_floats(frame) for name, frame in self.sections.items()}

    def section(self, name: str | None = None) -> pd.DataFrame:
        if name is None:
            return next(iter(self.sections.values()))
        if name not in self.sections:
            raise invalid_param(
                f"report {self.name!r} has no section {name!r}; choose one of: {', '.join(self.sections)}"
            )
        return self.sections[name]


FLOAT_DECIMALS = 9


def _settle_floats(frame: pd.DataFrame) -> pd.DataFrame:
    """Round float columns so a report is the same on every run.

    DuckDB aggregates in parallel threads, so `avg`/`sum`/`regr_slope` can differ in the last bit
    from one run to the next (0.3148827557828692 vs ...691), and a zero slope can come out as
    -3.9e-18. Nine decimals is far below anything a report shows; `+ 0.0` turns -0.0 into 0.0.
    """
    floats = frame.select_dtypes(include="float").columns
    if len(floats) == 0:
        return frame
    frame = frame.copy()
    frame[floats] = frame[floats].round(FLOAT_DECIMALS) + 0.0
    return frame


def parse_when(text: str | None, *, now: datetime | None = None) -> datetime | None:
    """`2026-01-31`, `2026-01-31T12:00`, `2026-01-31T12:00:00+02:00`, or relative `90m`, `12h`, `7d`, `2w` (ago)."""
    if text is None:
        return None
    value = text.strip()
    if not value:
        raise invalid_param("empty date; use e.g. 2026-01-31, 2026-01-31T12:00 or 7d")
    match = _RELATIVE.match(value)
    if match:
        seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        try:
            return (now or datetime.now(UTC)) - timedelta(seconds=seconds)
        except OverflowError:
            raise invalid_param(f"{text!r} reaches before year 1") from None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value)
    except ValueError:
        raise invalid_param(f"cannot read {text!r} as a date; use e.g. 2026-01-31, 2026-01-31T12:00 or 7d") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _naive_utc(ts: datetime | None) -> datetime | None:
    if ts is None:
        return None
    if ts.tzinfo is not None:
        ts = ts.astimezone(UTC).replace(tzinfo=None)
    return ts
