"""`graphlemon logs`: a node execution's log (read, tail, follow), a task's logs, and log retention (REQ-13).

    graphlemon logs NODE_EXEC_ID [--follow] [--tail N] [--json]
    graphlemon logs --task TASK_ID [--json]
    graphlemon logs retention show | set --days N

`logs X ...` runs `logs show X ...` (the group inserts the default command when the first word is not one).
"""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer
from typer.core import TyperGroup

from ._common import JsonOpt, ProjectOpt, console, emit_json, line, open_project


class _DefaultShow(TyperGroup):
    """`logs NODE ...` and `logs --task T` are `logs show ...`; `logs retention ...` is the retention group."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["show", *args]
        return super().parse_args(ctx, args)


app = typer.Typer(cls=_DefaultShow, no_args_is_help=True,
                  help="Execution logs: one per node execution; read, tail or follow one, list a task's.")  # fmt: skip
retention_app = typer.Typer(no_args_is_help=True, help="How many days a closed log is kept (log_retention_config).")
app.add_typer(retention_app, name="retention")


@app.command("show")
def show(
    node_exec_id: Annotated[
        str | None, typer.Argument(help="The node execution, e.g. ne-task-...-coder-u1-r0.")
    ] = None,
    task: Annotated[str | None, typer.Option("--task", help="List this task's logs with state and size.")] = None,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Stream new lines until the node ends (with --json: ndjson).")
    ] = False,
    tail: Annotated[int | None, typer.Option("--tail", "-n", min=0, help="Only the last N lines.")] = None,
    view: Annotated[
        str,
        typer.Option(
            "--view",
            help="people (time, kind, a sentence; tool arguments left out), raw (the lines "
            "as written), or auto: people on a terminal, raw into a pipe or file",
        ),
    ] = "auto",
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """A node execution's log (or, with --task, the list of a task's logs)."""
    from ..errors import invalid_param

    if (node_exec_id is None) == (task is None):
        raise invalid_param("give a NODE_EXEC_ID or --task TASK_ID (one of them)")
    if view not in ("auto", "people", "raw"):
        raise invalid_param(f"unknown view {view!r}; choose people, raw or auto")
    people = view == "people" or (view == "auto" and sys.stdout.isatty())
    handle = open_project(project)
    if task is not None:
        _list_task(handle, task, as_json)
        return
    _show_node(handle, node_exec_id, follow=follow, tail=tail, as_json=as_json, people=people)


def _list_task(handle, task_id: str, as_json: bool) -> None:
    from ..execlogs import NodeLogs, file_stats_size
    from ..taskboard import TaskBoard

    logs = NodeLogs(handle.ledger).for_task(task_id)
    if not logs:  # a unique prefix names a task, as everywhere a TASK_ID is taken; TASK_NOT_FOUND for none
        task_id = TaskBoard(handle.ledger).resolve(task_id)
        logs = NodeLogs(handle.ledger).for_task(task_id)
    rows = []
    for g in logs:
        size = g.size_bytes if g.status != "open" else file_stats_size(handle.state_dir / g.path)
        rows.append({"node_exec_id": g.node_exec_id, "stage": g.stage, "unit_id": g.unit_id, "status": g.status,
                     "size_bytes": size if g.status != "purged" else 0, "line_count": g.line_count,
                     "created_at": g.created_at.isoformat(), "path": g.path})  # fmt: skip
    if as_json:
        emit_json({"task_id": task_id, "logs": rows})
        return
    out = console()
    if not rows:
        out.print(f"{task_id}: no execution logs yet", highlight=False)
        return
    for r in rows:
        out.print(line((r["status"].ljust(12), _style(r["status"])), f" {_human(r['size_bytes']).rjust(9)}  ",
                       r["node_exec_id"]), highlight=False)  # fmt: skip


def _show_node(handle, nid: str, *, follow: bool, tail: int | None, as_json: bool, people: bool) -> None:
    from ..execlogs import follow as follow_log
    from ..execlogs import read_range, tail_lines
    from ..nodes import log_view as view

    v = view(handle.ledger, nid)  # NODE_EXEC_NOT_FOUND
    path = handle.state_dir / v.log.path if v.log else None
    if as_json and not follow:
        data = v.model_dump(mode="json")
        if path is not None and v.status not in ("purged", None):
            data["text"] = _text(path, tail, read_range, tail_lines)
        emit_json(data)
        return
    if v.notice and v.status in ("purged", None):
        console().print(line((f"{nid}: ", "bold"), v.notice), highlight=False)
        return
    if v.notice:
        typer.echo(f"{nid}: {v.notice}", err=True)
    shown = _for_people if people else str
    if not follow:
        sys.stdout.write(shown(_text(path, tail, read_range, tail_lines)))
        sys.stdout.flush()
        return
    start = tail_lines(path, tail).start if tail is not None else 0
    from ..execlogs import NodeLogs

    for chunk in follow_log(NodeLogs(handle.ledger), nid, start):
        if as_json:  # one JSON object per line (ndjson), as they come
            sys.stdout.write("".join(json.dumps({"node_exec_id": nid, "line": text}, ensure_ascii=False) + "\n"
                                     for text in chunk.text.splitlines()))  # fmt: skip
        else:
            sys.stdout.write(shown(chunk.text))
        sys.stdout.flush()
    final = NodeLogs(handle.ledger).find(nid)
    if final is not None:
        typer.echo(f"-- {nid}: log {final.status}", err=True)


def _for_people(text: str) -> str:
    from ..log_render import plain, render

    return plain(render(text))


def _text(path, tail, read_range, tail_lines) -> str:
    if tail is not None:
        return tail_lines(path, tail).text
    parts, start = [], 0
    while True:
        chunk = read_range(path, start, 1 << 20)
        if chunk.end == start:
            return "".join(parts)
        parts.append(chunk.text)
        start = chunk.end


# -- retention ------------------------------------------------------------------------------------------------


@retention_app.command("show")
def retention_show(project: ProjectOpt = None, as_json: JsonOpt = False) -> None:
    """The log retention setting (v_log_retention_settings)."""
    from ..execlogs import NodeLogs
    from ..execlogs.retention import retention

    handle = open_project(project)
    cfg = retention(handle.ledger)
    counts: dict[str, int] = {}
    for g in NodeLogs(handle.ledger).all().values():
        counts[g.status] = counts.get(g.status, 0) + 1
    if as_json:
        emit_json({"retention_days": cfg.retention_days, "set_by": cfg.by, "set_at": cfg.ts.isoformat(),
                   "logs": counts})  # fmt: skip
        return
    who = "default" if cfg.by == "default" else f"set by {cfg.by} on {cfg.ts:%Y-%m-%d %H:%M} UTC"
    summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "no logs yet"
    console().print(f"closed logs are kept {cfg.retention_days} day(s) ({who}); {summary}", highlight=False)


@retention_app.command("set")
def retention_set(
    days: Annotated[str, typer.Option("--days", help="Whole days a closed log is kept (1..3650).")],
    project: ProjectOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Change how many days closed logs are kept (c_log_retention_config_update); a bad value changes nothing."""
    from ..execlogs.retention import set_retention

    cfg = set_retention(open_project(project).ledger, days, by="cli")  # INVALID_PARAM before anything is written
    if as_json:
        emit_json({"retention_days": cfg.retention_days, "set_by": cfg.by, "set_at": cfg.ts.isoformat()})
        return
    console().print(f"closed logs are now kept {cfg.retention_days} day(s); the daily log-retention run applies it",
                    highlight=False)  # fmt: skip


def _style(status: str) -> str:
    return {"open": "cyan", "closed": "green", "purged": "dim", "purge_failed": "red"}.get(status, "")


def _human(size: int | None) -> str:
    size = size or 0
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return str(size)
