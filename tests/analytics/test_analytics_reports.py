"""The three reports on synthetic ledgers, checked against answers computed in plain Python."""

from __future__ import annotations

from datetime import timedelta

import analytics_oracle as oracle
import pandas as pd
import pytest
from analytics_helpers import SEEDS, close, keyed, rows
from analytics_synthetic import T0

from graphlemon.analytics.report import Report, ReportFilters
from graphlemon.analytics.reports.budget import budget_report
from graphlemon.analytics.reports.bug_history import bug_history_report
from graphlemon.analytics.reports.convergence import convergence_report

FILTERS = {
    "all": {},
    "task": {"task": "t-2"},
    "unit": {"unit": "u1"},
    "window": {"since": T0 + timedelta(hours=1), "until": T0 + timedelta(hours=4)},
}
CASES = [(seed, name) for seed in SEEDS for name in FILTERS]


def _filters(records, name: str, **extra) -> tuple[ReportFilters, oracle.F]:
    values = {**FILTERS[name], **extra, "as_of": records.end + timedelta(minutes=30)}
    return ReportFilters(**values), oracle.F(**values)


@pytest.mark.parametrize(("seed", "name"), CASES)
def test_convergence_matches_plain_python(ledgers, seed, name):
    records, db = ledgers[seed]
    filters, f = _filters(records, name)
    report = convergence_report(db, filters)
    close(keyed(report.section("units"), "task_id", "unit_id"), oracle.convergence_units(records, f))
    close(keyed(report.section("tasks"), "task_id"), oracle.convergence_tasks(records, f))


@pytest.mark.parametrize(("seed", "name"), CASES)
def test_budget_matches_plain_python(ledgers, seed, name):
    records, db = ledgers[seed]
    filters, f = _filters(records, name)
    report = budget_report(db, filters)
    expected = oracle.budget_tasks(records, f)
    got = keyed(report.section("tasks"), "task_id")
    close(got, {k: {c: v for c, v in row.items() if c != "task_id"} for k, row in expected.items()})
    for section, key in (("by_stage", "stage"), ("by_role", "role"), ("by_model", "model")):
        close(keyed(report.section(section), key), {k[0]: v for k, v in oracle.spend_by(records, f, key).items()})
    close(
        keyed(report.section("breakdown"), "task_id", "stage", "role", "model"),
        oracle.spend_by(records, f, "task_id", "stage", "role", "model"),
    )
    costs = [r["cost_usd"] for r in rows(report.section("breakdown"))]
    assert costs == sorted(costs, reverse=True)


@pytest.mark.parametrize(("seed", "name"), CASES)
def test_bug_history_matches_plain_python(ledgers, seed, name):
    records, db = ledgers[seed]
    filters, f = _filters(records, name)
    report = bug_history_report(db, filters)
    close(rows(report.section("open_bugs")), oracle.open_bugs(records, f))  # order too
    close(keyed(report.section("open_by_age"), "severity"), oracle.open_by_age(records, f))
    close(keyed(report.section("signatures"), "signature"), oracle.signatures(records, f))
    close(keyed(report.section("flaky_tests"), "scope", "unit_id", "test", "code_ref"), oracle.flaky_tests(records, f))
    close(
        keyed(report.section("root_causes"), "root_cause_category"), oracle.share_by(records, f, "root_cause_category")
    )
    close(keyed(report.section("categories"), "category"), oracle.share_by(records, f, "category"))


@pytest.mark.parametrize("seed", SEEDS)
def test_bug_queries_by_test_and_category(ledgers, seed):
    records, db = ledgers[seed]
    for extra in ({"test": "test_1"}, {"category": "impl_bug"}, {"unit": "u0", "test": "test_2"}):
        filters, f = _filters(records, "all", **extra)
        report = bug_history_report(db, filters)
        close(rows(report.section("open_bugs")), oracle.open_bugs(records, f))
        close(
            keyed(report.section("flaky_tests"), "scope", "unit_id", "test", "code_ref"), oracle.flaky_tests(records, f)
        )
        close(keyed(report.section("categories"), "category"), oracle.share_by(records, f, "category"))


def test_the_synthetic_ledgers_exercise_every_definition(ledgers):
    """Guard against vacuous passes: across the seeds each interesting case occurs."""
    seen = {
        "stuck": 0,
        "green": 0,
        "reopened": 0,
        "flaky": 0,
        "signatures": 0,
        "quota_wait": 0,
        "budget_block": 0,
        "open_wait": 0,
    }
    for records, _db in ledgers.values():
        f = oracle.F(as_of=records.end)
        units = oracle.convergence_units(records, f).values()
        seen["stuck"] += sum(u["non_converging"] for u in units)
        seen["green"] += sum(u["rounds_to_green"] is not None for u in units)
        seen["reopened"] += sum(u["bugs_reopened"] for u in units)
        seen["flaky"] += len(oracle.flaky_tests(records, f))
        seen["signatures"] += len(oracle.signatures(records, f))
        budget = oracle.budget_tasks(records, f)
        seen["quota_wait"] += budget["t-2"]["node_quota_wait_hours"] > 0
        seen["budget_block"] += budget["t-2"]["budget_blocks"]
        seen["open_wait"] += budget["t-3"]["quota_wait_hours"] > 0
    assert all(seen.values()), seen


def test_known_answers_on_a_hand_checked_seed(ledgers):
    """A few numbers read off the records by hand, independent of both implementations."""
    records, db = ledgers[0]
    as_of = records.end + timedelta(hours=2)
    budget = {r["task_id"]: r for r in rows(budget_report(db, ReportFilters(as_of=as_of)).section("tasks"))}
    # t-2 waited for quota from its waiting_for_quota event to its next event, and was blocked for budget once
    t2 = sorted((e for e in records.tasks if e.task_id == "t-2"), key=lambda e: e.ts)
    wait = next(i for i, e in enumerate(t2) if e.status == "waiting_for_quota")
    assert budget["t-2"]["quota_wait_hours"] == pytest.approx((t2[wait + 1].ts - t2[wait].ts).total_seconds() / 3600)
    assert budget["t-2"]["budget_blocks"] == 1
    # t-3's wait is still open: it runs until as_of
    t3_wait = max(e.ts for e in records.tasks if e.task_id == "t-3" and e.status == "waiting_for_quota")
    assert budget["t-3"]["quota_wait_hours"] == pytest.approx((as_of - t3_wait).total_seconds() / 3600)
    # the burn uses the latest budget limit of the task
    latest = max((b for b in records.budget if b.task_id == "t-1"), key=lambda b: b.ts)
    assert budget["t-1"]["limit_value"] == latest.limit_value


def test_api_filters_read_text_and_naive_datetimes_as_utc():
    from datetime import UTC, datetime

    from graphlemon import analytics
    from graphlemon.errors import ErrorCode, GraphLemonError

    f = analytics.make_filters(since=datetime(2026, 3, 1), until="2026-03-02T00:00+01:00", as_of="2026-03-03")
    assert (f.since, f.until, f.as_of) == (
        datetime(2026, 3, 1, tzinfo=UTC),
        datetime(2026, 3, 1, 23, tzinfo=UTC),
        datetime(2026, 3, 3, tzinfo=UTC),
    )
    with pytest.raises(GraphLemonError) as err:
        analytics.make_filters(since="2026-03-02", until=datetime(2026, 3, 1))
    assert err.value.code == ErrorCode.INVALID_PARAM


def test_report_floats_are_settled_so_runs_agree():
    """DuckDB's parallel aggregates differ in the last bit between runs; a report must not."""

    def build(mean: float, slope: float) -> pd.DataFrame:
        frame = pd.DataFrame({"unit_id": ["u0"], "mean_hours_to_fix": [mean], "failure_trend": [slope], "rounds": [3]})
        return Report("convergence", "t", {"units": frame}, ReportFilters()).section()

    first = build(0.3148827557828692, -3.96508223080413e-18)
    second = build(0.3148827557828691, 0.0)
    pd.testing.assert_frame_equal(first, second)
    assert str(first.at[0, "failure_trend"]) == "0.0"  # not -0.0
    assert first["rounds"].dtype.kind == "i"
