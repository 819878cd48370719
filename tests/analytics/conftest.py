"""Fixtures for the analytics tests: synthetic ledgers, one per seed (helpers: analytics_helpers.py)."""

from __future__ import annotations

import pytest
from analytics_helpers import SEEDS
from analytics_synthetic import build

from graphlemon.analytics import LedgerDB
from graphlemon.ledger import Ledger


@pytest.fixture(scope="module")
def ledgers(tmp_path_factory):
    """seed -> (Synthetic records, LedgerDB over them); built once per test module."""
    built, dbs = {}, []
    for seed in SEEDS:
        state = tmp_path_factory.mktemp(f"ledger-{seed}") / ".graphlemon"
        records = build(seed)
        Ledger(state).append(*records.all())
        db = LedgerDB(state)
        dbs.append(db)
        built[seed] = (records, db)
    yield built
    for db in dbs:
        db.close()
