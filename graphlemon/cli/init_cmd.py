"""`graphlemon init [PATH] [--yes]` (REQ-11, c_project_create): PATH relative to the current folder, default it."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from ._common import JsonOpt, emit_json


def _ask(question: str) -> bool:
    try:
        return typer.confirm(question, default=False, err=True)
    except typer.Abort:
        return False
    finally:
        if not sys.stdin.isatty():  # piped answers are not echoed: end the prompt line
            typer.echo("", err=True)


def register(app: typer.Typer) -> None:
    @app.command()
    def init(
        path: Annotated[
            str, typer.Argument(help="Folder of the target repository (relative to the current folder; default: it).")
        ] = ".",
        yes: Annotated[
            bool, typer.Option("--yes", "-y", help="Agree to `git init` if the folder is not a git repository.")
        ] = False,
        as_json: JsonOpt = False,
    ) -> None:
        """Create .graphlemon/ and project.json in a git repository (idempotent)."""
        from ..console.project_registry import ProjectRegistry  # the console's list of known projects

        if path.strip():  # the CLI knows the folder it runs in (the console does not: it asks for absolute paths)
            path = os.path.abspath(os.path.expanduser(path))
        result = ProjectRegistry().add(path, confirm_git_init=(lambda _q: True) if yes else _ask)
        handle = result.project
        if as_json:
            emit_json(
                {
                    "project_id": handle.project_id,
                    "root": str(handle.root),
                    "state_dir": str(handle.state_dir),
                    "created": result.created,
                    "git_initialised": result.git_initialised,
                }
            )
            return
        verb = "initialised" if result.created else "already initialised"
        extra = " (ran git init)" if result.git_initialised else ""
        typer.echo(f"{verb}: project {handle.project_id} at {handle.root}{extra}")
