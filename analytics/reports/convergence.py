"""Convergence report: is the loop converging, per task and per unit?

Definitions (docs/analytics.md):

* a unit's L1 round is one `(loop_round, attempt)` of its `scope='unit'` runs; the
  round's result is its latest run (by ts); rounds are numbered 1, 2, ... in
  `(loop_round, attempt)` order. A task's org round is one `loop_round`; its result
  is the latest run of every (scope, unit) in that round: failures are summed,
  the round is green when all of them are ok.
* failures per round = `summary.failed` of the round's result; `failure_trend` is
  the least-squares slope of failures over round number (negative = converging).
* rounds to green = the number of the first green round.
* bugs opened / fixed / reopened count bug events (open, transition to fixed,
  transition to reopened); mean hours to fix = open -> first `fixed`.
* a bug is stuck when failing runs reference it (`failures[].bug_id`) in >= 3
  distinct `(loop_round, attempt)` rounds; a unit with a stuck bug is flagged
  `non_converging`.
"""

from __future__ import annotations

from ..db import LedgerDB
from ..report import Report, ReportFilters

_IN_RANGE = "($since IS NULL OR __TS__ >= $since) AND ($until IS NULL OR __TS__ < $until)"


def _in_range(ts: str) -> str:
    return _IN_RANGE.replace("__TS__", ts)


# Per-bug facts, computed once and grouped by both levels: one row per bug of the filtered
# set with its key (tk = task_id or ''), its event counts in range and its stuck rounds.
BUG_FACTS_SQL = f"""
WITH bk AS (
    SELECT bug_id, COALESCE(task_id, '') AS tk, unit_id, opened_at, first_fixed_at FROM bug_state
    WHERE ($task IS NULL OR task_id = $task) AND ($unit IS NULL OR unit_id = $unit)
),
ev AS (
    SELECT bug_id, count(*) AS events,
           count(*) FILTER (WHERE event = 'open') AS opened,
           count(*) FILTER (WHERE event = 'transition' AND status = 'fixed') AS fixed,
           count(*) FILTER (WHERE event = 'transition' AND status = 'reopened') AS reopened
    FROM bugs WHERE {_in_range("ts")} GROUP BY bug_id
),
bug_rounds AS (
    SELECT bug_id, count(DISTINCT (loop_round, attempt)) AS rounds
    FROM run_failures WHERE bug_id IS NOT NULL AND {_in_range("ts")} GROUP BY bug_id
)
SELECT bk.bug_id, bk.tk, bk.unit_id, ev.events, ev.opened, ev.fixed, ev.reopened, bug_rounds.rounds,
       CASE WHEN first_fixed_at IS NOT NULL AND {_in_range("opened_at")}
            THEN (epoch(first_fixed_at) - epoch(opened_at)) / 3600.0 END AS hours_to_fix
FROM bk LEFT JOIN ev USING (bug_id) LEFT JOIN bug_rounds USING (bug_id)
"""

BUG_ROUTES_SQL = f"""
SELECT b.tk, b.unit_id, e.suggested_route AS route, count(*) AS n
FROM bugs e JOIN _convergence_bugs b USING (bug_id)
WHERE e.suggested_route IS NOT NULL AND {_in_range("e.ts")}
GROUP BY ALL
"""

TRIAGE_SQL = f"""
SELECT COALESCE(t.task_id, rt.task_id, '') AS tk, t.affected_units, t.category
FROM triage t LEFT JOIN (SELECT run_id, any_value(task_id) AS task_id FROM runs GROUP BY run_id) rt USING (run_id)
WHERE {_in_range("t.ts")}
"""

# grouped by __KEYS__ ("tk, unit_id" or "tk") over the bugs in __BUGS__ and triage rows __TRIAGE__
_FACTS = """
b AS (SELECT * FROM _convergence_bugs WHERE __BUGS__),
bug_counts AS (
    SELECT __KEYS__, sum(opened)::BIGINT AS bugs_opened, sum(fixed)::BIGINT AS bugs_fixed,
           sum(reopened)::BIGINT AS bugs_reopened
    FROM b WHERE events > 0 GROUP BY ALL
),
mttf AS (SELECT __KEYS__, avg(hours_to_fix) AS mean_hours_to_fix FROM b WHERE hours_to_fix IS NOT NULL GROUP BY ALL),
stuck AS (
    SELECT __KEYS__, max(rounds) AS max_rounds_same_bug,
           list(bug_id ORDER BY bug_id) FILTER (WHERE rounds >= 3) AS stuck_bugs
    FROM b WHERE rounds IS NOT NULL GROUP BY ALL
),
routes AS (
    SELECT __KEYS__, string_agg(route || '=' || n, ' ' ORDER BY route) AS routes
    FROM (SELECT __KEYS__, route, sum(n)::BIGINT AS n FROM _convergence_routes WHERE __BUGS__ GROUP BY ALL)
    GROUP BY ALL
),
tri_rows AS (__TRIAGE__),
triage_mix AS (
    SELECT __KEYS__, string_agg(category || '=' || n, ' ' ORDER BY category) AS triage_mix
    FROM (SELECT __KEYS__, category, count(*) AS n FROM tri_rows GROUP BY ALL) GROUP BY ALL
)"""

_RUNS = f"""
r AS (
    SELECT *, COALESCE(task_id, '') AS tk FROM runs
    WHERE ($task IS NULL OR task_id = $task) AND ($unit IS NULL OR unit_id = $unit) AND {_in_range("ts")}
)"""

_ROUND_STATS = """
    SELECT __KEYS__,
           count(*) AS rounds,
           list(failed ORDER BY round_no) AS failures_per_round,
           CASE WHEN count(*) >= 2 THEN regr_slope(failed, round_no) END AS failure_trend,
           min(round_no) FILTER (WHERE ok) AS rounds_to_green,
           arg_max(ok, round_no) AS green
    FROM numbered GROUP BY ALL"""

_FACT_COLUMNS = """
       COALESCE(bug_counts.bugs_opened, 0) AS bugs_opened,
       COALESCE(bug_counts.bugs_fixed, 0) AS bugs_fixed,
       COALESCE(bug_counts.bugs_reopened, 0) AS bugs_reopened,
       mttf.mean_hours_to_fix,
       triage_mix.triage_mix,
       routes.routes,
       COALESCE(stuck.max_rounds_same_bug, 0) AS max_rounds_same_bug"""

_FACT_JOINS = """
LEFT JOIN rounds USING (__KEYS__)
LEFT JOIN bug_counts USING (__KEYS__)
LEFT JOIN mttf USING (__KEYS__)
LEFT JOIN routes USING (__KEYS__)
LEFT JOIN stuck USING (__KEYS__)
LEFT JOIN triage_mix USING (__KEYS__)"""

UNITS_SQL = (
    f"""
WITH {_RUNS},
unit_rounds AS (
    SELECT tk, unit_id, loop_round, attempt, arg_max(summary.failed, ts) AS failed, arg_max(ok, ts) AS ok
    FROM r WHERE scope = 'unit' AND unit_id IS NOT NULL GROUP BY ALL
),
numbered AS (
    SELECT *, row_number() OVER (PARTITION BY tk, unit_id ORDER BY loop_round, attempt) AS round_no FROM unit_rounds
),
rounds AS ({_ROUND_STATS}
),
{_FACTS},
keys AS (
    SELECT tk, unit_id FROM rounds UNION SELECT tk, unit_id FROM bug_counts
    UNION SELECT tk, unit_id FROM stuck UNION SELECT tk, unit_id FROM triage_mix
)
SELECT NULLIF(tk, '') AS task_id, unit_id,
       COALESCE(rounds.rounds, 0) AS rounds, rounds.failures_per_round, rounds.failure_trend,
       rounds.rounds_to_green, rounds.green,{_FACT_COLUMNS},
       COALESCE(stuck.stuck_bugs, []) AS stuck_bugs,
       COALESCE(stuck.max_rounds_same_bug, 0) >= 3 AS non_converging
FROM keys{_FACT_JOINS}
ORDER BY task_id NULLS FIRST, unit_id
""".replace("__KEYS__", "tk, unit_id")
    .replace("__BUGS__", "unit_id IS NOT NULL")
    .replace(
        "__TRIAGE__",
        "SELECT * FROM (SELECT tk, unnest(affected_units) AS unit_id, category FROM _convergence_triage)"
        " WHERE ($task IS NULL OR tk = $task) AND ($unit IS NULL OR unit_id = $unit)",
    )
)

TASKS_SQL = (
    f"""
WITH {_RUNS},
last_in_round AS (
    SELECT tk, loop_round, scope, unit_id, arg_max(summary.failed, ts) AS failed, arg_max(ok, ts) AS ok
    FROM r GROUP BY ALL
),
org_rounds AS (SELECT tk, loop_round, sum(failed)::BIGINT AS failed, bool_and(ok) AS ok FROM last_in_round GROUP BY ALL),
numbered AS (SELECT *, row_number() OVER (PARTITION BY tk ORDER BY loop_round) AS round_no FROM org_rounds),
rounds AS ({_ROUND_STATS}
),
{_FACTS},
unit_flags AS (
    SELECT COALESCE(task_id, '') AS tk, count(*) AS units, count(*) FILTER (WHERE green) AS units_green,
           count(*) FILTER (WHERE non_converging) AS non_converging_units
    FROM _convergence_units GROUP BY ALL
),
st AS (SELECT COALESCE(task_id, '') AS tk, status FROM task_state WHERE $task IS NULL OR task_id = $task),
keys AS (
    SELECT tk FROM rounds UNION SELECT tk FROM bug_counts UNION SELECT tk FROM stuck
    UNION SELECT tk FROM triage_mix UNION SELECT tk FROM st WHERE $unit IS NULL
)
SELECT NULLIF(tk, '') AS task_id, st.status,
       COALESCE(unit_flags.units, 0) AS units, COALESCE(unit_flags.units_green, 0) AS units_green,
       COALESCE(rounds.rounds, 0) AS org_rounds, rounds.failures_per_round, rounds.failure_trend,
       rounds.rounds_to_green, rounds.green,{_FACT_COLUMNS},
       COALESCE(unit_flags.non_converging_units, 0) AS non_converging_units,
       COALESCE(stuck.max_rounds_same_bug, 0) >= 3 OR COALESCE(unit_flags.non_converging_units, 0) > 0 AS non_converging
FROM keys{_FACT_JOINS}
LEFT JOIN unit_flags USING (tk)
LEFT JOIN st USING (tk)
ORDER BY task_id NULLS FIRST
""".replace("__KEYS__", "tk")
    .replace("__BUGS__", "true")
    .replace("__TRIAGE__", "SELECT tk, category FROM _convergence_triage WHERE $task IS NULL OR tk = $task")
)

# temp tables, in order: each step's SQL may read the ones before it
_STEPS = (
    ("_convergence_bugs", BUG_FACTS_SQL),
    ("_convergence_routes", BUG_ROUTES_SQL),
    ("_convergence_triage", TRIAGE_SQL),
    ("_convergence_units", UNITS_SQL),
)


def convergence_report(db: LedgerDB, filters: ReportFilters | None = None) -> Report:
    filters = filters or ReportFilters()
    params = filters.sql_params()
    try:
        for name, sql in _STEPS:
            db.execute(f"CREATE OR REPLACE TEMP TABLE {name} AS {sql}", params)
        units = db.frame("SELECT * FROM _convergence_units")
        tasks = db.frame(TASKS_SQL, params)
    finally:
        for name, _ in _STEPS:
            db.execute(f"DROP TABLE IF EXISTS {name}")
    return Report("convergence", "Convergence", {"units": units, "tasks": tasks}, filters, BRIEF)


BRIEF = {
    "units": [
        "task_id",
        "unit_id",
        "rounds",
        "failures_per_round",
        "rounds_to_green",
        "bugs_opened",
        "max_rounds_same_bug",
        "non_converging",
    ],
    "tasks": [
        "task_id",
        "status",
        "units",
        "units_green",
        "org_rounds",
        "failures_per_round",
        "bugs_opened",
        "non_converging",
    ],
}
