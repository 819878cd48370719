"""Every ledger an earlier version wrote still reads: through the ledger, the analytics reports and the console's views.

The fixtures under tests/fixtures/ledgers/ were each written by one earlier version's own models and ledger
(tests/fixtures/ledgers/write_fixture.py, docs/ledger.md): one per schema version and one per rename.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Literal, get_args, get_origin

import pytest

from graphlemon.analytics import REPORTS, LedgerDB
from graphlemon.analytics.formats import to_json, to_markdown
from graphlemon.analytics.report import ReportFilters
from graphlemon.console import views
from graphlemon.ledger import Ledger
from graphlemon.models import LEDGER_FILES, OLD_STAGE_NAMES, RECORD_TYPES, Stage
from graphlemon.project import open_project

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ledgers"
OLD_LEDGERS = sorted(p for p in FIXTURES.iterdir() if (p / "project.json").is_file())
STAGES = set(get_args(Stage))


@pytest.fixture(params=OLD_LEDGERS, ids=lambda p: p.name)
def old_project(request, tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(request.param, root / ".graphlemon")
    return root


def _literal_values(annotation) -> set[str]:
    if get_origin(annotation) is Literal:
        return set(get_args(annotation))
    return {v for arg in get_args(annotation) for v in _literal_values(arg)}


def test_the_fixtures_cover_every_record_kind_of_today():
    """A record kind added since the newest fixture was written needs a fixture of its own (docs/ledger.md)."""
    assert OLD_LEDGERS, f"no fixture ledgers under {FIXTURES}"
    newest = max(OLD_LEDGERS, key=lambda p: len(list(p.glob("*.ndjson"))))
    missing = [kind for kind, name in LEDGER_FILES.items() if not (newest / name).is_file()]
    assert not missing, f"no fixture ledger holds {missing}: write one (tests/fixtures/ledgers/write_fixture.py)"


def test_the_ledger_reads_every_old_record_under_todays_names(old_project: Path):
    ledger = Ledger(old_project / ".graphlemon")
    read = {kind: ledger.read(kind) for kind in LEDGER_FILES}
    assert read["task"] and read["node"] and read["usage"] and read["bug"] and read["run"]
    stages = {r.stage for kind in ("node", "usage", "log") for r in read[kind] if getattr(r, "stage", None)}
    assert stages and stages <= STAGES
    assert "bug-triager" in {r.stage for r in read["node"]}, "the story has a bug-triager node in every version"
    assert ledger.repairs == []


def test_the_reports_read_an_old_ledger(old_project: Path):
    handle = open_project(old_project)
    with LedgerDB(handle.state_dir, cache=False) as db:
        reports = [build(db, ReportFilters()) for build in REPORTS.values()]
        stages = {row[0] for row in db.execute("SELECT DISTINCT stage FROM usage WHERE stage IS NOT NULL").fetchall()}
        node_stages = {row[0] for row in db.execute("SELECT DISTINCT stage FROM nodes").fetchall()}
    assert stages <= STAGES and "bug-triager" in node_stages <= STAGES, (stages, node_stages)
    for report in reports:
        assert to_markdown(report) and to_json(report)
    budget = next(r for r in reports if r.name == "budget")
    assert set(budget.section("by_stage")["stage"].dropna()) == stages  # usage has had a stage since its 2nd version


def test_the_console_views_read_an_old_ledger(old_project: Path):
    handle = open_project(old_project)
    records = {kind: handle.ledger.read(kind) for kind in LEDGER_FILES}
    rows = views.dashboard(records)
    assert {r["status"] for r in rows} == {"done", "blocked_pending_human"}
    for row in rows:
        detail = views.task_detail(records, row["task_id"])
        assert detail is not None and detail["task"]["task_id"] == row["task_id"]
        assert {n["stage"] for n in detail["nodes"]} <= STAGES
    done = next(r for r in rows if r["status"] == "done")
    assert views.task_detail(records, done["task_id"])["usage"]["by_role"]["bug-triager"]["calls"] == 1


@pytest.mark.parametrize(
    ("kind", "field"),
    [
        (kind, name)
        for kind, model in RECORD_TYPES.items()
        for name, info in model.model_fields.items()
        if STAGES <= _literal_values(info.annotation)
    ],
)
def test_every_stage_or_role_field_reads_an_old_name(kind: str, field: str):
    """A rename maps the old name wherever a record holds a stage or a role, not only where it was noticed."""
    model = RECORD_TYPES[kind]
    for old, new in OLD_STAGE_NAMES.items():
        sample = _sample(kind) | {field: old}
        assert getattr(model.model_validate(sample), field) == new


def _sample(kind: str) -> dict:
    """The first record of `kind` in the newest fixture, as written."""
    import json

    newest = max(OLD_LEDGERS, key=lambda p: len(list(p.glob("*.ndjson"))))
    return json.loads((newest / LEDGER_FILES[kind]).read_text().splitlines()[0])
