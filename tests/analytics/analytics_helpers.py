"""Comparison helpers for the analytics tests (a uniquely named module: conftest.py names collide)."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
SEEDS = [0, 1, 2, 3, 4]


def plain(value):
    """A DataFrame cell as a plain Python value: lists, aware UTC datetimes, None for missing."""
    if isinstance(value, np.ndarray | list):
        return [plain(v) for v in value]
    if value is None or value is pd.NaT or value is pd.NA:
        return None
    if isinstance(value, pd.Timestamp):
        return value.to_pydatetime().replace(tzinfo=UTC)
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def rows(frame: pd.DataFrame) -> list[dict]:
    return [{c: plain(v) for c, v in row.items()} for row in frame.to_dict("records")]


def keyed(frame: pd.DataFrame, *keys: str) -> dict:
    out = {}
    for row in rows(frame):
        key = tuple(row.pop(k) for k in keys)
        out[key[0] if len(keys) == 1 else key] = row
    return out


def close(got, expected, path: str = "") -> None:
    """Recursive equality with float tolerance; fails with the path of the first difference."""
    if isinstance(expected, float) and isinstance(got, int | float) and not isinstance(got, bool):
        assert math.isclose(got, expected, rel_tol=1e-9, abs_tol=1e-9), f"{path}: {got} != {expected}"
    elif isinstance(expected, dict):
        assert isinstance(got, dict), f"{path}: {got!r} is not a dict"
        assert set(got) == set(expected), f"{path}: keys differ: {sorted(map(str, set(got) ^ set(expected)))}"
        for k in expected:
            close(got[k], expected[k], f"{path}.{k}")
    elif isinstance(expected, list):
        assert isinstance(got, list) and len(got) == len(expected), f"{path}: {got!r} != {expected!r}"
        for i, (g, e) in enumerate(zip(got, expected, strict=True)):
            close(g, e, f"{path}[{i}]")
    elif isinstance(expected, datetime):
        assert isinstance(got, datetime) and abs((got - expected).total_seconds()) < 1e-3, (
            f"{path}: {got} != {expected}"
        )
    else:
        assert got == expected, f"{path}: {got!r} != {expected!r}"
