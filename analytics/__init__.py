"""DuckDB over the ledger: views, convergence, budget, bug history, plots. Analytics only reads the ledger.

Definitions and formats: docs/analytics.md. Entry points for notebooks and other parts:
`convergence`, `budget`, `bugs` (-> pandas DataFrames), `sql`, `shell_init`, `build_report`,
`write_reports`, `open_db` (a validated in-memory `LedgerDB`).
"""

from .api import (
    REPORTS,
    ReportBundle,
    budget,
    bugs,
    build_report,
    convergence,
    make_filters,
    open_db,
    shell_init,
    sql,
    write_reports,
)
from .db import LedgerDB
from .report import Report, ReportFilters, parse_when

__all__ = [
    "REPORTS",
    "LedgerDB",
    "Report",
    "ReportBundle",
    "ReportFilters",
    "budget",
    "bugs",
    "build_report",
    "convergence",
    "make_filters",
    "open_db",
    "parse_when",
    "shell_init",
    "sql",
    "write_reports",
]
