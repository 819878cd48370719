"""`graphlemon gc [--dry-run]`: remove what finished tasks left behind (worktrees, merged branches, scratch folders)."""

from __future__ import annotations

from typing import Annotated

import typer

from ._common import JsonOpt, ProjectOpt, emit_json, open_project

_VERBS = {"remove_worktree": ("removed worktree", "would remove worktree"),
          "delete_branch": ("deleted branch", "would delete branch"),
          "remove_scratch": ("removed scratch folder", "would remove scratch folder"),
          "keep": ("kept", "would keep")}  # fmt: skip


def register(app: typer.Typer) -> None:
    @app.command()
    def gc(
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Only list what would be removed.")] = False,
        project: ProjectOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Remove the worktrees and merged branches of finished (done / abandoned) tasks, and dead runs' scratch
        folders. Work that is not in HEAD, or not committed, is kept and listed."""
        from ..cleanup import run_gc

        items = run_gc(open_project(project), dry_run=dry_run)
        if as_json:
            emit_json({"dry_run": dry_run, "items": [i.model_dump() for i in items]})
            return
        for item in items:
            verb = _VERBS[item.action][dry_run]
            why = f" ({item.reason})" if item.reason and item.action == "keep" else ""
            typer.echo(f"{verb} {item.target}{why}")
        if not items:
            typer.echo("nothing to clean")
