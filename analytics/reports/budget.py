"""Budget report: tokens and cost by task, stage, role and model; burn vs. limit; waits.

Definitions (docs/analytics.md):

* total tokens = input + output + cache read + cache write;
  cache hit share = cache_read / (input + cache_read + cache_write).
* burn = used / limit, where used is the task's all-time total tokens
  (limit_type `token_count`) or cost (`cost_usd`) and the limit is its latest
  BudgetConfig; `--since/--until` narrow the spend columns, never the burn.
* progress = units whose latest unit run is ok / units with unit runs;
  projected cost = cost for a done/abandoned task, else cost / progress
  (unknown while no unit is green); projected burn likewise in the limit's unit.
* budget_blocks / quota_blocks count task events `blocked_pending_human` with
  blocked_reason `budget_exceeded` / `usage_limit_wait_timeout`; blocked_hours is
  the time spent in those blocks, quota_wait_hours the time the task spent in
  `waiting_for_quota`, node_quota_wait_hours the same over work-node executions
  (from `quota_wait_started_at` when recorded). An interval ends at the next
  event of the same task / node, or at `as_of` (now) if there is none.
"""

from __future__ import annotations

from ..db import LedgerDB
from ..report import Report, ReportFilters

_IN_RANGE = "($since IS NULL OR ts >= $since) AND ($until IS NULL OR ts < $until)"
_TASK = "($task IS NULL OR task_id = $task)"
_USAGE = f"(SELECT * FROM usage WHERE {_TASK} AND ($unit IS NULL OR unit_id = $unit) AND {_IN_RANGE})"
_TOKENS = "input_tokens + output_tokens + cache_read_tokens + cache_write_tokens"
_SPEND = f"""count(*) AS calls,
       sum(input_tokens)::BIGINT AS input_tokens,
       sum(output_tokens)::BIGINT AS output_tokens,
       sum(cache_read_tokens)::BIGINT AS cache_read_tokens,
       sum(cache_write_tokens)::BIGINT AS cache_write_tokens,
       sum({_TOKENS})::BIGINT AS total_tokens,
       sum(cost_usd) AS cost_usd,
       sum(cache_read_tokens) / NULLIF(sum(input_tokens + cache_read_tokens + cache_write_tokens), 0) AS cache_hit_share"""


def _spend_by(*keys: str) -> str:
    cols = ", ".join(keys)
    return f"SELECT {cols}, {_SPEND} FROM {_USAGE} GROUP BY {cols} ORDER BY cost_usd DESC, {cols}"


def _hours(cond: str) -> str:
    return f"sum(greatest(0, epoch(COALESCE(next_ts, $as_of)) - epoch(start_ts))) FILTER (WHERE {cond}) / 3600.0"


TASKS_SQL = f"""
WITH spend AS (SELECT COALESCE(task_id, '') AS tk, {_SPEND} FROM {_USAGE} GROUP BY tk),
lifetime AS (
    SELECT task_id AS tk, sum({_TOKENS})::BIGINT AS tokens, sum(cost_usd) AS cost
    FROM usage WHERE task_id IS NOT NULL AND {_TASK} GROUP BY task_id
),
unit_latest AS (
    SELECT task_id, unit_id, arg_max(ok, ts) AS ok FROM runs
    WHERE scope = 'unit' AND unit_id IS NOT NULL AND task_id IS NOT NULL AND {_TASK} GROUP BY ALL
),
progress AS (
    SELECT task_id AS tk, count(*) AS units, count(*) FILTER (WHERE ok) AS units_green,
           count(*) FILTER (WHERE ok) / count(*) AS progress
    FROM unit_latest GROUP BY task_id
),
task_ev AS (
    SELECT task_id, status, blocked_reason, ts, ts AS start_ts, lead(ts) OVER (PARTITION BY task_id ORDER BY ts) AS next_ts
    FROM tasks WHERE {_TASK}
),
task_waits AS (
    SELECT task_id AS tk,
           count(*) FILTER (WHERE status = 'blocked_pending_human' AND blocked_reason = 'budget_exceeded') AS budget_blocks,
           count(*) FILTER (WHERE status = 'blocked_pending_human' AND blocked_reason = 'usage_limit_wait_timeout') AS quota_blocks,
           {_hours("status = 'blocked_pending_human' AND blocked_reason IN ('budget_exceeded', 'usage_limit_wait_timeout')")} AS blocked_hours,
           {_hours("status = 'waiting_for_quota'")} AS quota_wait_hours
    FROM task_ev WHERE {_IN_RANGE} GROUP BY task_id
),
node_ev AS (
    SELECT task_id, status, ts,
           CASE WHEN status = 'waiting_for_quota' THEN COALESCE(quota_wait_started_at, ts) ELSE ts END AS start_ts,
           lead(ts) OVER (PARTITION BY node_exec_id ORDER BY ts) AS next_ts
    FROM nodes WHERE event = 'transition' AND task_id IS NOT NULL AND {_TASK}
),
node_waits AS (
    SELECT task_id AS tk, {_hours("status = 'waiting_for_quota'")} AS node_quota_wait_hours
    FROM node_ev WHERE {_IN_RANGE} GROUP BY task_id
),
st AS (SELECT task_id AS tk, status FROM task_state WHERE {_TASK}),
lim AS (SELECT task_id AS tk, limit_type, limit_value FROM budget_limits WHERE {_TASK}),
keys AS (SELECT tk FROM spend UNION SELECT tk FROM (SELECT tk FROM st UNION SELECT tk FROM lim) WHERE $unit IS NULL),
joined AS (
    SELECT NULLIF(keys.tk, '') AS task_id, st.status, spend.* EXCLUDE (tk), lim.limit_type, lim.limit_value,
           CASE lim.limit_type WHEN 'cost_usd' THEN COALESCE(lifetime.cost, 0) WHEN 'token_count' THEN COALESCE(lifetime.tokens, 0) END AS used,
           lifetime.tokens AS lifetime_tokens, lifetime.cost AS lifetime_cost,
           COALESCE(progress.units, 0) AS units, COALESCE(progress.units_green, 0) AS units_green, progress.progress,
           COALESCE(task_waits.budget_blocks, 0) AS budget_blocks, COALESCE(task_waits.quota_blocks, 0) AS quota_blocks,
           COALESCE(task_waits.blocked_hours, 0) AS blocked_hours, COALESCE(task_waits.quota_wait_hours, 0) AS quota_wait_hours,
           COALESCE(node_waits.node_quota_wait_hours, 0) AS node_quota_wait_hours
    FROM keys
    LEFT JOIN spend USING (tk) LEFT JOIN lifetime USING (tk) LEFT JOIN lim USING (tk)
    LEFT JOIN st USING (tk) LEFT JOIN progress USING (tk)
    LEFT JOIN task_waits USING (tk) LEFT JOIN node_waits USING (tk)
)
SELECT task_id, status, calls, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, total_tokens,
       cost_usd, cache_hit_share, limit_type, limit_value, used, used / limit_value AS burn,
       units, units_green, progress,
       CASE WHEN status IN ('done', 'abandoned') THEN COALESCE(lifetime_cost, 0)
            WHEN progress > 0 THEN lifetime_cost / progress END AS projected_cost_usd,
       CASE WHEN status IN ('done', 'abandoned') THEN used / limit_value
            WHEN progress > 0 THEN used / progress / limit_value END AS projected_burn,
       budget_blocks, quota_blocks, blocked_hours, quota_wait_hours, node_quota_wait_hours
FROM joined
ORDER BY task_id NULLS FIRST
"""

SPEND_OVER_TIME_SQL = f"""
WITH u AS {_USAGE},
span AS (SELECT CASE WHEN max(ts) - min(ts) <= INTERVAL 72 HOUR THEN 'hour' ELSE 'day' END AS part FROM u)
SELECT date_trunc((SELECT part FROM span), ts) AS bucket, count(*) AS calls,
       sum({_TOKENS})::BIGINT AS total_tokens, sum(cost_usd) AS cost_usd,
       sum(sum(cost_usd)) OVER (ORDER BY date_trunc((SELECT part FROM span), ts)) AS cumulative_cost_usd
FROM u GROUP BY bucket ORDER BY bucket
"""


def budget_report(db: LedgerDB, filters: ReportFilters | None = None) -> Report:
    filters = filters or ReportFilters()
    params = filters.sql_params()
    sections = {
        "tasks": db.frame(TASKS_SQL, params),
        "by_stage": db.frame(_spend_by("stage"), params),
        "by_role": db.frame(_spend_by("role"), params),
        "by_model": db.frame(_spend_by("model"), params),
        "breakdown": db.frame(_spend_by("task_id", "stage", "role", "model"), params),
        "spend_over_time": db.frame(SPEND_OVER_TIME_SQL, params),
    }
    return Report("budget", "Budget", sections, filters, BRIEF)


_SPEND_BRIEF = ["calls", "total_tokens", "cost_usd", "cache_hit_share"]
BRIEF = {
    "tasks": [
        "task_id",
        "status",
        "total_tokens",
        "cost_usd",
        "cache_hit_share",
        "burn",
        "projected_burn",
        "quota_wait_hours",
    ],
    "by_stage": ["stage", *_SPEND_BRIEF],
    "by_role": ["role", *_SPEND_BRIEF],
    "by_model": ["model", *_SPEND_BRIEF],
    "breakdown": ["task_id", "stage", "role", "model", "calls", "cost_usd"],
}
