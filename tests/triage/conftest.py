"""Triage fixtures: a corpus scenario copied into a fresh, initialised git project."""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "triage"


@dataclass
class Scenario:
    name: str
    root: Path
    project: object  # ProjectHandle
    run_id: str
    category: str
    affected_units: list[str]

    @property
    def run_dir(self) -> Path:
        return self.root / ".graphlemon" / "integration" / "runs" / self.run_id


def make_scenario(name: str, tmp_path: Path) -> Scenario:
    from graphlemon.project import init_project

    root = tmp_path / name
    shutil.copytree(CORPUS / name, root)
    expected = json.loads((root / "expected.json").read_text())
    (root / "expected.json").unlink()  # the triager must not see the label
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    project = init_project(root).project
    return Scenario(name, root, project, expected["run_id"], expected["category"], expected["affected_units"])


@pytest.fixture
def keep(monkeypatch):
    """`keep("infra:disk_full", ...)`: those measured mechanisms decide as kept ones do, for a test of what a kept
    mechanism does (which are kept today is a measurement: decider.MEASURED, tests/triage/test_decider.py)."""
    from graphlemon.triage.decider import KEPT, MEASURED, SUGGESTING

    def _keep(*rules: str) -> None:
        for rule in rules:
            monkeypatch.setitem(KEPT, rule, MEASURED[rule])
            if rule in SUGGESTING:
                monkeypatch.delitem(SUGGESTING, rule)

    return _keep


@pytest.fixture
def scenario(tmp_path):
    """`scenario("cm01_expired_token_accepted")` → a Scenario in a temp project."""
    return lambda name: make_scenario(name, tmp_path)
