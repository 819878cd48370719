"""The benchmarks' smoke size: with `BENCH_SMOKE=1` each `benchmarks/bench_*.py` runs at a size that takes seconds
and still prints every figure. `make bench-smoke` (part of `make test`) runs them all that way: it checks that each
one runs, and judges no number (a smoke-size figure means nothing)."""

from __future__ import annotations

import os
from typing import TypeVar

T = TypeVar("T")
SMOKE = os.environ.get("BENCH_SMOKE") == "1"


def sized(full: T, smoke: T) -> T:
    """`full` normally, `smoke` under BENCH_SMOKE=1."""
    return smoke if SMOKE else full
