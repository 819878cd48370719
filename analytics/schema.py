"""The one place that defines the ledger's DuckDB views.

Column names and types are derived from the pydantic record models
(`graphlemon.models.RECORD_TYPES`), so a field added to a model appears in its
view; the generated SQL always names every column with an explicit DuckDB type
(`read_json(..., columns={...})`, never inference). Absent keys are None
(records are written with `exclude_none=True`); fields with a non-None default
are COALESCEd to it, as pydantic would fill it. Datetimes are read as TIMESTAMPTZ
and stored as UTC TIMESTAMPs.

Every view of kind K is `SELECT <columns> FROM <source>`, where the source is
the ledger file (`read_json`), or an empty typed relation when the file does not
exist yet. Derived views (`bug_state`, `run_failures`, `task_state`,
`budget_limits`) are SQL over those and are identical in Python, the CLI and
the DuckDB shell (`graphlemon sql --shell-init`).
"""

from __future__ import annotations

import types
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from graphlemon.models import LEDGER_FILES, RECORD_TYPES, SCHEMA_VERSION

# kind -> view name: the ledger file's stem (runs, bugs, usage, ...)
VIEW_NAMES: dict[str, str] = {kind: Path(file).stem for kind, file in LEDGER_FILES.items()}


class Column(BaseModel):
    name: str
    duck_type: str
    required: bool  # no default: must be present in every line
    vocabulary: tuple[str, ...] = ()  # allowed values of a Literal field
    default_sql: str | None = None  # COALESCE value for a field with a non-None default


def q(identifier: str) -> str:
    """A quoted SQL identifier (field names such as `by` are keywords)."""
    return '"' + identifier.replace('"', '""') + '"'


def sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _strip_optional(annotation: Any) -> Any:
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def duck_type(annotation: Any) -> str:
    """The DuckDB type of a pydantic field annotation (raises TypeError for one we do not map)."""
    annotation = _strip_optional(annotation)
    origin = get_origin(annotation)
    if annotation is Any:
        return "JSON"
    if origin is Literal:
        return "VARCHAR"
    if origin is list:
        (item,) = get_args(annotation)
        return f"{duck_type(item)}[]"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        fields = ", ".join(f"{q(n)} {duck_type(f.annotation)}" for n, f in annotation.model_fields.items())
        return f"STRUCT({fields})"
    scalar = {bool: "BOOLEAN", int: "BIGINT", float: "DOUBLE", str: "VARCHAR", datetime: "TIMESTAMPTZ"}
    if annotation in scalar:
        return scalar[annotation]
    raise TypeError(f"no DuckDB type for annotation {annotation!r}")


def _literal_sql(value: Any, type_sql: str) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return sql_string(value)
    if isinstance(value, list) and not value:
        return f"CAST([] AS {type_sql})"
    if isinstance(value, BaseModel):
        parts = ", ".join(f"{sql_string(k)}: {_literal_sql(v, '')}" for k, v in value.model_dump().items())
        return f"CAST({{{parts}}} AS {type_sql})"
    return None


def columns(kind: str) -> list[Column]:
    model = RECORD_TYPES[kind]
    out = []
    for name, field in model.model_fields.items():
        type_sql = duck_type(field.annotation)
        inner = _strip_optional(field.annotation)
        vocabulary = tuple(get_args(inner)) if get_origin(inner) is Literal else ()
        default: Any = None
        if field.default is not PydanticUndefined:
            default = field.default
        elif field.default_factory is not None and name != "ts":
            default = field.default_factory()  # type: ignore[call-arg]
        out.append(
            Column(
                name=name,
                duck_type=type_sql,
                required=field.is_required(),
                vocabulary=vocabulary,
                default_sql=None if default is None else _literal_sql(default, type_sql),
            )
        )
    return out


# -- the per-kind views --------------------------------------------------------------------


def _select_list(kind: str) -> str:
    items = []
    for c in columns(kind):
        if c.duck_type == "TIMESTAMPTZ":  # stored as a UTC TIMESTAMP, whatever offset the line carried
            items.append(f"timezone('UTC', {q(c.name)}) AS {q(c.name)}")
        elif c.default_sql is not None:
            items.append(f"COALESCE({q(c.name)}, {c.default_sql}) AS {q(c.name)}")
        else:
            items.append(q(c.name))
    return ",\n       ".join(items)


def read_json_sql(kind: str, path: Path | str) -> str:
    """`read_json` of one ndjson file with every column typed explicitly."""
    spec = ", ".join(f"{sql_string(c.name)}: {sql_string(c.duck_type)}" for c in columns(kind))
    return (
        f"read_json({sql_string(str(path))}, format='newline_delimited', records=true, "
        f"auto_detect=false, maximum_object_size=67108864, columns={{{spec}}})"
    )


def empty_source_sql(kind: str) -> str:
    """A typed relation with no rows: the view of a ledger file that does not exist yet."""
    cols = ", ".join(f"CAST(NULL AS {c.duck_type}) AS {q(c.name)}" for c in columns(kind))
    return f"(SELECT {cols} WHERE false)"


def view_select_sql(kind: str, source_sql: str) -> str:
    return f"SELECT {_select_list(kind)}\nFROM {source_sql}"


def violations_sql(kind: str, relation: str) -> str:
    """Count rows the ledger would reject on the cheap checks: kind, version, required, vocabulary."""
    conds = [
        f"{q('kind')} IS DISTINCT FROM {sql_string(kind)}",
        f"{q('schema_version')} IS DISTINCT FROM {SCHEMA_VERSION}",
    ]
    for c in columns(kind):
        if c.required:
            conds.append(f"{q(c.name)} IS NULL")
        if c.vocabulary:
            allowed = ", ".join(sql_string(v) for v in c.vocabulary)
            conds.append(f"({q(c.name)} IS NOT NULL AND {q(c.name)} NOT IN ({allowed}))")
    return f"SELECT count(*) FROM {relation} WHERE " + "\n   OR ".join(conds)


# -- derived views (SQL over the per-kind views) -------------------------------------------

_BUG_FIELDS = (
    "source", "task_id", "unit_id", "run_id", "test_name", "category", "severity", "title", "detail",
    "affected_units", "signature", "root_cause_category", "root_cause_detail", "suggested_route",
)  # fmt: skip


def _bug_state_sql() -> str:
    """The fold of `graphlemon.bugs.apply_event` in ts order: a field's value is its latest non-null one.

    The open event sets the fields, later events (updates, transitions) override the
    ones they carry: that is the open row overlaid with an `arg_max` over the few
    later events that carry fields (arg_max skips NULLs), 3x faster than `arg_max`
    over every event.
    """
    carries = " OR ".join(f"{q(f)} IS NOT NULL" for f in _BUG_FIELDS)
    latest = ", ".join(f"arg_max({q(f)}, ts) AS {q(f)}" for f in _BUG_FIELDS)
    defaults = {"category": ", 'unknown'", "severity": ", 'medium'"}  # Bug's defaults
    overlaid = ",\n       ".join(
        f"COALESCE(o.{q(f)}, p.{q(f)}{defaults.get(f, '')}) AS {q('own_task_id' if f == 'task_id' else f)}"
        for f in _BUG_FIELDS
    )
    return f"""
WITH life AS (
    SELECT bug_id,
           arg_max(status, ts) AS status,
           min(ts) AS opened_at,
           max(ts) AS updated_at,
           min(ts) FILTER (WHERE event = 'transition' AND status = 'fixed') AS first_fixed_at,
           count(*) FILTER (WHERE event = 'transition' AND status = 'reopened') AS reopen_count,
           count(*) AS events
    FROM bugs GROUP BY bug_id
),
p AS (SELECT * FROM bugs WHERE event = 'open' QUALIFY row_number() OVER (PARTITION BY bug_id ORDER BY ts DESC) = 1),
o AS (SELECT bug_id, {latest} FROM bugs WHERE event <> 'open' AND ({carries}) GROUP BY bug_id),
folded AS (
    SELECT life.*,
       {overlaid}
    FROM life LEFT JOIN p USING (bug_id) LEFT JOIN o USING (bug_id)
)
SELECT f.* EXCLUDE (own_task_id),
       COALESCE(f.own_task_id, r.task_id) AS task_id,
       f.status IN ('open', 'fixing', 'reopened') AS active
FROM folded f
LEFT JOIN (SELECT run_id, any_value(task_id) AS task_id FROM runs GROUP BY run_id) r ON r.run_id = f.run_id
"""


DERIVED_VIEWS: dict[str, str] = {
    # the current state of each bug; task_id falls back to the task of the run that opened it
    "bug_state": _bug_state_sql(),
    # one row per failing test per run (unnest in the select list: DuckDB plans filters on a
    # lateral `FROM runs, unnest(...)` join badly, ~15x slower)
    "run_failures": """
SELECT run_id, task_id, unit_id, scope, loop_round, attempt, code_ref, ts, f.test, f.file, f.message, f.bug_id
FROM (SELECT run_id, task_id, unit_id, scope, loop_round, attempt, code_ref, ts, unnest(failures) AS f FROM runs)
""",
    # each task's latest status
    "task_state": """
SELECT task_id,
       arg_max(status, ts) AS status,
       arg_max(blocked_reason, ts) AS blocked_reason,
       arg_min(goal_text, ts) FILTER (WHERE goal_text IS NOT NULL) AS goal_text,
       min(ts) AS created_at,
       max(ts) AS updated_at
FROM tasks
GROUP BY task_id
""",
    # each skill iteration's current state (REQ-08): the proposal's fields, the latest status and gate verdict
    "skill_iteration_state": """
SELECT p.iteration_id, p.skill, p.parent_commit, p.commit, p.triggered_by_bug_id, p.task_id, p.author,
       p.rationale, p.diff_stat, p.ts AS proposed_at, l.status, l.updated_at, l.gate_ok
FROM (SELECT * FROM skill_iterations WHERE status = 'proposed') p
JOIN (SELECT iteration_id, arg_max(status, ts) AS status, max(ts) AS updated_at,
             arg_max(gate.ok, ts) FILTER (WHERE gate IS NOT NULL) AS gate_ok
      FROM skill_iterations GROUP BY iteration_id) l USING (iteration_id)
""",
    # the skills commit each bug was found under (REQ-08): the skill_commit of the task's latest turn for the same
    # unit (or a unit-less turn, for a unit-less bug) before the bug opened
    "bug_skill_commits": """
SELECT b.bug_id, b.task_id, b.unit_id, b.opened_at, b.active, u.skill_commit
FROM bug_state b
ASOF LEFT JOIN (SELECT task_id, COALESCE(unit_id, '') AS uk, ts, skill_commit FROM usage
                WHERE skill_commit IS NOT NULL) u
  ON b.task_id = u.task_id AND COALESCE(b.unit_id, '') = u.uk AND b.opened_at >= u.ts
""",
    # each task's current budget guardrail (the latest BudgetConfig)
    "budget_limits": """
SELECT task_id, arg_max(limit_type, ts) AS limit_type, arg_max(limit_value, ts) AS limit_value, max(ts) AS set_at
FROM budget
GROUP BY task_id
""",
}


def derived_ddl(create: str) -> list[str]:
    """`CREATE OR REPLACE VIEW` (the shell) or `CREATE OR REPLACE TABLE` (materialised once in LedgerDB)."""
    return [f"CREATE OR REPLACE {create} {name} AS {sql.strip()}" for name, sql in DERIVED_VIEWS.items()]
