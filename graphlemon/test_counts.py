"""A run's test counts: shared by the ledger's records and the test runner.

Its own module so that `graphlemon test` (graphlemon.testrun) does not import every ledger
model (graphlemon.models) just for this one.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

STATE_DIR = ".graphlemon"  # a project's state folder (graphlemon.project; the runner's last-failed store)


class TestSummary(BaseModel):
    model_config = ConfigDict(extra="forbid")
    __test__ = False  # not a pytest class

    total: int = 0
    passed: int = 0
    failed: int = 0
    skipped: int = 0
