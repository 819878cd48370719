"""Bug history: open bugs by age and severity, recurring signatures, flaky tests, root causes.

Definitions (docs/analytics.md):

* a bug's state is the fold of its events (`bug_state`); active = open, fixing or
  reopened; age = as_of (now) - opened_at.
* the bug set is narrowed by task, unit, test (test_name), category and the time
  range on opened_at.
* a signature is the bug's `signature`, else its test name; it recurs when bugs
  of >= 2 distinct tasks share it.
* a test is flaky on a code_ref when, among completed runs (not crashed, not
  timed out) of the same scope and unit on that code_ref, at least one lists it
  as failing and at least one does not.
"""

from __future__ import annotations

from ..db import LedgerDB
from ..report import Report, ReportFilters

_BUGS = """(
    SELECT *, (epoch($as_of) - epoch(opened_at)) / 3600.0 AS age_hours FROM bug_state
    WHERE ($task IS NULL OR task_id = $task) AND ($unit IS NULL OR unit_id = $unit)
      AND ($test IS NULL OR test_name = $test) AND ($category IS NULL OR category = $category)
      AND ($since IS NULL OR opened_at >= $since) AND ($until IS NULL OR opened_at < $until)
)"""
_SEVERITY_RANK = "CASE severity WHEN 'critical' THEN 0 WHEN 'high' THEN 1 WHEN 'medium' THEN 2 ELSE 3 END"

OPEN_BUGS_SQL = f"""
SELECT bug_id, severity, status, category, task_id, unit_id, test_name, age_hours, reopen_count, title
FROM {_BUGS} WHERE active
ORDER BY {_SEVERITY_RANK}, opened_at, bug_id
"""

OPEN_BY_AGE_SQL = f"""
SELECT severity,
       count(*) FILTER (WHERE age_hours < 24) AS under_1d,
       count(*) FILTER (WHERE age_hours >= 24 AND age_hours < 168) AS d1_to_7d,
       count(*) FILTER (WHERE age_hours >= 168) AS over_7d,
       count(*) AS total
FROM {_BUGS} WHERE active
GROUP BY severity ORDER BY {_SEVERITY_RANK}
"""

SIGNATURES_SQL = f"""
SELECT COALESCE(signature, test_name) AS signature, count(DISTINCT task_id) AS tasks, count(*) AS bugs,
       count(*) FILTER (WHERE active) AS active, count(DISTINCT unit_id) AS units,
       min(opened_at) AS first_seen, max(opened_at) AS last_seen,
       (list(DISTINCT task_id ORDER BY task_id) FILTER (WHERE task_id IS NOT NULL))[1:10] AS first_task_ids
FROM {_BUGS}
WHERE COALESCE(signature, test_name) IS NOT NULL
GROUP BY 1 HAVING count(DISTINCT task_id) >= 2
ORDER BY tasks DESC, bugs DESC, signature
"""

FLAKY_SQL = """
WITH r AS (
    SELECT run_id, scope, COALESCE(unit_id, '') AS uk, code_ref, failures FROM runs
    WHERE code_ref IS NOT NULL AND NOT crashed AND NOT timed_out
      AND ($task IS NULL OR task_id = $task) AND ($unit IS NULL OR unit_id = $unit)
      AND ($since IS NULL OR ts >= $since) AND ($until IS NULL OR ts < $until)
),
per_code AS (SELECT scope, uk, code_ref, count(*) AS runs FROM r GROUP BY ALL HAVING count(*) >= 2),
fails AS (  -- only code that ran more than once can be flaky
    SELECT DISTINCT run_id, scope, uk, code_ref, unnest(failures).test AS test
    FROM r SEMI JOIN per_code USING (scope, uk, code_ref)
),
per_test AS (
    SELECT scope, uk, code_ref, test, count(*) AS failed_runs
    FROM fails WHERE $test IS NULL OR test = $test GROUP BY ALL
)
SELECT scope, NULLIF(uk, '') AS unit_id, test, code_ref, failed_runs, runs - failed_runs AS passed_runs
FROM per_test JOIN per_code USING (scope, uk, code_ref)
WHERE runs > failed_runs
ORDER BY failed_runs + passed_runs DESC, unit_id, test, code_ref
"""


def _share_by(column: str) -> str:
    return f"""
SELECT {column}, count(*) AS bugs, count(*) FILTER (WHERE active) AS active, count(*) / sum(count(*)) OVER () AS share
FROM {_BUGS} WHERE {column} IS NOT NULL
GROUP BY {column} ORDER BY bugs DESC, {column}
"""


def bug_history_report(db: LedgerDB, filters: ReportFilters | None = None) -> Report:
    filters = filters or ReportFilters()
    params = filters.sql_params()
    sections = {
        "open_bugs": db.frame(OPEN_BUGS_SQL, params),
        "open_by_age": db.frame(OPEN_BY_AGE_SQL, params),
        "signatures": db.frame(SIGNATURES_SQL, params),
        "flaky_tests": db.frame(FLAKY_SQL, params),
        "root_causes": db.frame(_share_by("root_cause_category"), params),
        "categories": db.frame(_share_by("category"), params),
    }
    return Report("bugs", "Bug history", sections, filters, BRIEF)


BRIEF = {
    "open_bugs": ["bug_id", "severity", "status", "category", "unit_id", "test_name", "age_hours"],
    "signatures": ["signature", "tasks", "bugs", "active", "last_seen"],
}
