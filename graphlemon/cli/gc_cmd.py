"""`graphlemon gc [--dry-run] [--retention [--days N]]`: remove what finished tasks left behind (worktrees, merged
branches, scratch folders), close the execution logs killed runs left open, and run log retention now."""

from __future__ import annotations

from typing import Annotated

import typer

from ._common import JsonOpt, ProjectOpt, emit_json, open_project

_VERBS = {"remove_worktree": ("removed worktree", "would remove worktree"),
          "delete_branch": ("deleted branch", "would delete branch"),
          "remove_scratch": ("removed scratch folder", "would remove scratch folder"),
          "close_log": ("closed the execution log of", "would close the execution log of"),
          "keep": ("kept", "would keep")}  # fmt: skip


def register(app: typer.Typer) -> None:
    @app.command()
    def gc(
        dry_run: Annotated[bool, typer.Option("--dry-run", help="Only list what would be removed.")] = False,
        retention: Annotated[
            bool, typer.Option("--retention", help="Also run log retention now (what the daily flow does).")
        ] = False,
        days: Annotated[
            str | None, typer.Option("--days", help="With --retention: purge logs closed more than N days ago.")
        ] = None,
        project: ProjectOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Remove the worktrees and merged branches of finished (done / abandoned) tasks, and dead runs' scratch
        folders; close the execution logs a killed run left open. Work that is not in HEAD, or not committed, is
        kept and listed. --retention purges the execution logs past retention now."""
        from ..errors import invalid_param
        from ..execlogs.retention import check_retention_days, run_retention
        from ..gc import run_gc

        if days is not None and not retention:
            raise invalid_param("--days goes with --retention")
        chosen = check_retention_days(days) if days is not None else None  # a bad value: nothing is done
        handle = open_project(project)
        items = run_gc(handle, dry_run=dry_run)
        result = run_retention(handle.ledger, chosen) if retention and not dry_run else None
        if as_json:
            emit_json({"dry_run": dry_run, "items": [i.model_dump() for i in items],
                       "retention": result.model_dump(mode="json") if result else None})  # fmt: skip
            return
        for item in items:
            verb = _VERBS[item.action][dry_run]
            why = f" ({item.reason})" if item.reason and item.action in ("keep", "close_log") else ""
            typer.echo(f"{verb} {item.target}{why}")
        if not items:
            typer.echo("nothing to clean")
        if retention and dry_run:
            typer.echo("would run log retention")
        if result is not None:
            typer.echo(result.summary())
            for failed in result.failed:
                typer.echo(f"  purge failed: {failed.path} ({failed.left_bytes} bytes left): {failed.error}")
