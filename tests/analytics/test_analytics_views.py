"""The ledger views: explicit types for every record kind, empty / missing files, corrupt lines,
schema versions, read-only SQL, and the DDL for the DuckDB shell."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import duckdb
import pytest
from analytics_helpers import plain, rows

from graphlemon import analytics
from graphlemon.analytics import LedgerDB
from graphlemon.analytics.db import shell_init_sql
from graphlemon.analytics.schema import VIEW_NAMES, columns, read_json_sql
from graphlemon.errors import ErrorCode, GraphLemonError
from graphlemon.ledger import Ledger
from graphlemon.models import (
    LEDGER_FILES,
    RECORD_TYPES,
    ArtifactRecord,
    BudgetConfig,
    BugEvent,
    EscalationRecord,
    NodeEvent,
    RunFailure,
    RunRecord,
    SddPatch,
    TaskEvent,
    TestSummary,
    TimelineEvent,
    TriageRecord,
    UsageRecord,
)

TS = datetime(2026, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)

ONE_OF_EACH = [
    TaskEvent(task_id="t", status="blocked_pending_human", blocked_reason="budget_exceeded", loop_round=2, goal_text="snake", ts=TS),
    NodeEvent(node_exec_id="n", task_id="t", stage="coder", unit_id="u", attempt=2, status="waiting_for_quota",
              quota_wait_started_at=TS - timedelta(hours=1), quota_limit_type="weekly", duration_ms=5, ts=TS),
    RunRecord(run_id="r", scope="unit", task_id="t", unit_id="u", attempt=3, loop_round=1, code_ref="abc", ok=False,
              summary=TestSummary(total=5, passed=4, failed=1),
              failures=[RunFailure(test="x → 400", file="a.py", line=3, expected={"status": 400}, got=[500, "err"], bug_id="b")],
              acceptance_coverage=0.5, next_action="retry_coder", ts=TS),
    BugEvent(bug_id="b", event="open", status="open", source="unit_test", unit_id="u", test_name="x", severity="high",
             affected_units=["u", "v"], title="it's \"broken\"", ts=TS),
    UsageRecord(call_id="c", task_id="t", stage="coder", role="coder", model="m", executor="anthropic", input_tokens=10,
                output_tokens=5, cache_read_tokens=7, cache_write_tokens=1, cost_usd=0.25, ts=TS),
    TriageRecord(run_id="r", root_cause="rc", category="contract_mismatch", affected_units=["u"], confidence=0.9,
                 proposed_sdd_patch=SddPatch(target_section="s", op="replace", text="t"), evidence=["a.py:1"], ts=TS),
    ArtifactRecord(artifact_id="a", artifact_type="sdd", version=2, path="docs/sdd.md", sha256="0" * 64, depends_on_artifact_ids=["p"], ts=TS),
    TimelineEvent(event="routed", task_id="t", summary="fast_lane", ts=TS),
    BudgetConfig(task_id="t", limit_type="cost_usd", limit_value=12.5, ts=TS),
    EscalationRecord(task_id="t", blocked_reason="not_converging", summary_md="# stuck", open_bug_ids=["b"], ts=TS),
]  # fmt: skip


def naive_utc(value):
    if isinstance(value, datetime):
        return value.astimezone(UTC)
    if isinstance(value, dict):
        return {k: naive_utc(v) for k, v in value.items()}
    if isinstance(value, list):
        return [naive_utc(v) for v in value]
    return value


def test_every_record_kind_has_explicitly_typed_columns():
    assert set(VIEW_NAMES) == set(RECORD_TYPES)
    for kind, model in RECORD_TYPES.items():
        cols = columns(kind)
        assert [c.name for c in cols] == list(model.model_fields)
        sql = read_json_sql(kind, "/x.ndjson")
        assert "auto_detect=false" in sql and "columns={" in sql
        assert all(f"'{c.name}': '{c.duck_type}'" in sql for c in cols)


def test_each_kind_reads_back_as_written(tmp_path):
    Ledger(tmp_path).append(*ONE_OF_EACH)
    with LedgerDB(tmp_path) as db:
        for record in ONE_OF_EACH:
            (got,) = rows(db.frame(f"SELECT * FROM {VIEW_NAMES[record.kind]}"))
            expected = naive_utc(record.model_dump())
            for name, value in expected.items():
                if name in ("expected", "got"):
                    continue
                if name == "failures":
                    for g, e in zip(got["failures"], value, strict=True):
                        assert json.loads(g.pop("expected")) == e.pop("expected")
                        assert json.loads(g.pop("got")) == e.pop("got")
                        assert g == e
                else:
                    assert got[name] == value, (record.kind, name)


def test_timestamps_with_an_offset_are_stored_in_utc(tmp_path):
    plus2 = timezone(timedelta(hours=2))
    Ledger(tmp_path).append(TimelineEvent(event="x", ts=datetime(2026, 5, 1, 14, 0, tzinfo=plus2)))
    with LedgerDB(tmp_path) as db:
        assert plain(db.frame("SELECT ts FROM timeline")["ts"][0]) == datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


def test_missing_and_empty_files_give_empty_typed_views_and_empty_reports(tmp_path):
    (tmp_path / "runs.ndjson").write_text("")
    (tmp_path / "bugs.ndjson").write_text("\n\n")
    with LedgerDB(tmp_path) as db:
        for kind, view in VIEW_NAMES.items():
            frame = db.frame(f"SELECT * FROM {view}")
            assert frame.empty and list(frame.columns) == [c.name for c in columns(kind)]
        for name in analytics.REPORTS:
            report = analytics.build_report(name, db=db)
            assert report.sections and all(frame.empty for frame in report.sections.values())
            assert all(len(frame.columns) > 1 for frame in report.sections.values())


def _write_runs(state: Path, *lines: str) -> Path:
    good = RunRecord(run_id="r0", scope="unit", ok=True, ts=TS).model_dump_json(exclude_none=True)
    path = state / LEDGER_FILES["run"]
    path.write_text("\n".join([good, good.replace("r0", "r1"), *lines]) + "\n")
    return path


@pytest.mark.parametrize(
    "line",
    [
        '{"kind": "run", "run_id": "r2", "scope": "unit", "ok": tru',  # not JSON
        "[1, 2, 3]",  # not an object
        '{"kind": "run", "run_id": "r2", "scope": "unit", "ok": true, "attempt": "third"}',  # wrong type
        '{"kind": "run", "scope": "unit", "ok": true}',  # required field missing
        '{"kind": "run", "run_id": "r2", "scope": "galaxy", "ok": true}',  # not in the vocabulary
        '{"kind": "bug", "bug_id": "b", "event": "open", "status": "open"}',  # a bug in runs.ndjson
    ],
)
def test_a_corrupt_line_is_ledger_corrupt_naming_file_and_line(tmp_path, line):
    path = _write_runs(tmp_path, line, RunRecord(run_id="r9", scope="unit", ok=True).model_dump_json(exclude_none=True))
    with pytest.raises(GraphLemonError) as err:
        LedgerDB(tmp_path)
    assert err.value.code == ErrorCode.LEDGER_CORRUPT
    assert err.value.context == {"file": str(path), "line": 3}
    assert f"{path}:3" in err.value.message


def test_what_the_ledger_accepts_analytics_accepts(tmp_path):
    # the file fixes the model: a line may omit `kind` and fields that have defaults
    _write_runs(tmp_path, '{"run_id": "r2", "scope": "unit", "ok": true}')
    with LedgerDB(tmp_path) as db:
        got = rows(db.frame("SELECT kind, schema_version, attempt, summary, failures FROM runs WHERE run_id = 'r2'"))
    assert got == [
        {"kind": "run", "schema_version": 1, "attempt": 1, "summary": TestSummary().model_dump(), "failures": []}
    ]
    assert [r.run_id for r in Ledger(tmp_path).read("run")] == ["r0", "r1", "r2"]


def test_a_torn_final_line_is_repaired_not_reported(tmp_path):
    path = _write_runs(tmp_path)
    with open(path, "a") as fh:
        fh.write('{"kind": "run", "run_id": "half')  # a writer died mid-append
    with LedgerDB(tmp_path) as db:
        assert db.frame("SELECT count(*) AS n FROM runs")["n"][0] == 2
    assert path.read_text().endswith("}\n")


def test_older_schema_versions_are_migrated_and_newer_ones_refused(tmp_path, monkeypatch):
    from graphlemon import ledger

    monkeypatch.setitem(
        ledger.MIGRATIONS, ("run", 0), lambda d: {**{k: v for k, v in d.items() if k != "try"}, "attempt": d["try"]}
    )
    _write_runs(
        tmp_path,
        '{"kind": "run", "schema_version": 0, "run_id": "old", "scope": "unit", "ok": false, "try": 4, "ts": "2026-01-01T00:00:00Z"}',
    )
    with LedgerDB(tmp_path) as db:
        got = db.frame("SELECT run_id, attempt, schema_version FROM runs WHERE run_id = 'old'")
        assert rows(got) == [{"run_id": "old", "attempt": 4, "schema_version": 1}]
    _write_runs(tmp_path, '{"kind": "run", "schema_version": 99, "run_id": "new", "scope": "unit", "ok": true}')
    with pytest.raises(GraphLemonError, match="newer than this graphlemon") as err:
        LedgerDB(tmp_path)
    assert err.value.context["line"] == 3


def test_user_sql_is_read_only_and_errors_are_invalid_param(tmp_path):
    _write_runs(tmp_path)
    target = tmp_path / "stolen.csv"
    with LedgerDB(tmp_path) as db:
        assert rows(db.user_query("SELECT count(*) AS n FROM runs")) == [{"n": 2}]
        for bad in (
            f"COPY runs TO '{target}'",
            "SELECT * FROM read_text('/etc/passwd')",
            "SELEC 1",
            "SELECT * FROM nope",
            "SELECT 'x'::INTEGER",  # fails when run, not when planned
            "  ",
        ):
            with pytest.raises(GraphLemonError) as err:
                db.user_query(bad)
            assert err.value.code == ErrorCode.INVALID_PARAM
        with pytest.raises(GraphLemonError):
            db.user_query("SET enable_external_access = true")
    assert not target.exists()


def test_shell_init_ddl_runs_in_a_fresh_duckdb_even_with_a_quote_in_the_path(tmp_path):
    state = tmp_path / "it's a repo" / ".graphlemon"
    state.mkdir(parents=True)
    Ledger(state).append(*ONE_OF_EACH)
    (state / LEDGER_FILES["timeline"]).unlink()  # a file that does not exist yet: an empty view
    ddl = shell_init_sql(state)
    con = duckdb.connect()
    con.execute(ddl)
    with LedgerDB(state) as db:
        for view in [*VIEW_NAMES.values(), "bug_state", "run_failures", "task_state", "budget_limits"]:
            shell, python = con.sql(f"SELECT * FROM {view}").df(), db.frame(f"SELECT * FROM {view}")
            assert list(shell.columns) == list(python.columns)
            assert rows(shell) == rows(python), view
    assert con.execute("SELECT count(*) FROM timeline").fetchone() == (0,)
