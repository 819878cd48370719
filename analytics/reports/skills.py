"""Skills (REQ-08): iterations per role, applied vs rejected, and bugs per skill version.

Definitions (docs/skills.md):

* an iteration's state is the fold of its events (`skill_iteration_state`);
* a skill version is a commit of the project's skills repository; a bug counts for the
  version its task's turns ran with when it opened (`bug_skill_commits`: the latest usage
  record of the same task and unit before the bug opened). Versions made by an iteration
  are named by it; the others (the seed, reverts) by their commit;
* `applied` counts the iterations applied now; `gate_passed` those the gate ever applied (applied now
  or rolled back since), and `applied_share` is `gate_passed / iterations`;
* the task / since / until filters narrow iterations by proposal time and bugs by opening time.
"""

from __future__ import annotations

from ..db import LedgerDB
from ..report import Report, ReportFilters

_ITERATIONS = """(
    SELECT * FROM skill_iteration_state
    WHERE ($task IS NULL OR task_id = $task)
      AND ($since IS NULL OR proposed_at >= $since) AND ($until IS NULL OR proposed_at < $until)
)"""

BY_ROLE_SQL = f"""
SELECT skill, count(*) AS iterations,
       count(*) FILTER (WHERE status = 'applied') AS applied,
       count(*) FILTER (WHERE status = 'rejected') AS rejected,
       count(*) FILTER (WHERE status = 'rolled_back') AS rolled_back,
       count(*) FILTER (WHERE status IN ('proposed', 'gating')) AS pending,
       count(*) FILTER (WHERE status IN ('applied', 'rolled_back')) AS gate_passed,
       count(*) FILTER (WHERE status IN ('applied', 'rolled_back')) / count(*) AS applied_share
FROM {_ITERATIONS} GROUP BY skill ORDER BY iterations DESC, skill
"""

ITERATIONS_SQL = f"""
SELECT iteration_id, skill, status, triggered_by_bug_id, author, gate_ok, left(commit, 12) AS commit,
       diff_stat, task_id, proposed_at, updated_at, rationale
FROM {_ITERATIONS} ORDER BY proposed_at, iteration_id
"""

BUGS_PER_VERSION_SQL = """
SELECT left(c.skill_commit, 12) AS skill_commit, i.iteration_id, i.skill,
       count(*) AS bugs, count(*) FILTER (WHERE c.active) AS active, count(DISTINCT c.task_id) AS tasks,
       min(c.opened_at) AS first_bug, max(c.opened_at) AS last_bug
FROM bug_skill_commits c
LEFT JOIN skill_iteration_state i ON i.commit = c.skill_commit
WHERE c.skill_commit IS NOT NULL AND ($task IS NULL OR c.task_id = $task)
  AND ($since IS NULL OR c.opened_at >= $since) AND ($until IS NULL OR c.opened_at < $until)
GROUP BY ALL ORDER BY first_bug
"""


def skills_report(db: LedgerDB, filters: ReportFilters | None = None) -> Report:
    filters = filters or ReportFilters()
    params = filters.sql_params()
    sections = {
        "by_role": db.frame(BY_ROLE_SQL, params),
        "iterations": db.frame(ITERATIONS_SQL, params),
        "bugs_per_version": db.frame(BUGS_PER_VERSION_SQL, params),
    }
    return Report("skills", "Skills", sections, filters, BRIEF)


BRIEF = {
    "iterations": ["iteration_id", "skill", "status", "triggered_by_bug_id", "author", "gate_ok", "commit"],
}
