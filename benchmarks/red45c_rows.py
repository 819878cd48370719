"""Per-scenario rows of one set through the rule path (the same `run_path` as bench_triage.py), as JSON lines.

    python benchmarks/red45c_rows.py red45c > rows.ndjson

Used to write tests/fixtures/triage/RED45C.md. A sealed set (blind6) is refused: it is printed as counts only.
"""

from __future__ import annotations

import json
import sys

from bench_triage import SEALED, names_of
from triage_paths import run_path

if __name__ == "__main__":
    split = sys.argv[1]
    if split in SEALED:
        sys.exit(f"{split} is sealed: counts only (bench_triage.py --split {split})")
    for row in run_path(names_of((split,)), None):
        print(json.dumps(row, default=str))
