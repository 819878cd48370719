"""Shared CLI helpers: the --project option, JSON output, consoles."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

ProjectOpt = Annotated[
    Path | None,
    typer.Option("--project", "-p", help="Project folder (default: found from the current directory, like git)."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")]


def open_project(path: Path | None):
    from ..project import open_project as _open

    return _open(path)


def emit_json(data: Any) -> None:
    """Exactly one JSON document on stdout."""
    if hasattr(data, "model_dump"):
        data = data.model_dump(mode="json")
    typer.echo(json.dumps(data, ensure_ascii=False, default=str))


def console():
    from rich.console import Console

    return Console()
