"""Shared CLI helpers: the --project option, JSON output, consoles."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any

import typer

ProjectOpt = Annotated[
    Path | None,
    typer.Option("--project", "-p", help="Project folder (default: found from the current directory, like git)."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON object on stdout.")]
WideOpt = Annotated[bool, typer.Option("--wide", help="Every column, even if the table gets wider than the terminal.")]


def seconds(limit: float):
    """A typer callback for a duration option: a finite number of seconds in (0, limit] (nan, inf, 0 and negative
    values are a usage error, so INVALID_PARAM with exit 2, before anything runs)."""

    def check(value: float | None) -> float | None:
        if value is not None and not (math.isfinite(value) and 0 < value <= limit):
            raise typer.BadParameter(f"must be a number of seconds above 0 and at most {limit:g}, got {value}")
        return value

    return check


def open_project(path: Path | None):
    from ..project import open_project as _open

    return _open(path)


def emit_json(data: Any) -> None:
    """Exactly one JSON document on stdout."""
    if hasattr(data, "model_dump"):
        data = data.model_dump(mode="json")
    typer.echo(json.dumps(data, ensure_ascii=False, default=str))


def console():
    """The CLI's rich console. It never parses markup: a goal, a bug title, a test's output or an agent's answer
    prints exactly as written (`[/bold]` in a title is text, not a closing tag). Style our own words with
    `line(...)` / rich `Text`, never with `[tags]` inside a string."""
    from rich.console import Console

    return Console(markup=False, emoji=False)


def line(*parts: str | tuple[str, str]):
    """One printable line from plain strings and `(text, style)` pairs; no part is parsed as markup."""
    from rich.text import Text

    return Text.assemble(*parts)


def invocation() -> str:
    """How to call graphlemon again, as a person can copy it: `graphlemon` when that is on PATH and is this
    installation's, else the full path of this installation's `graphlemon` (a virtualenv that is not activated),
    else `python -m graphlemon` with this interpreter's full path."""
    import shutil
    import sys

    on_path = shutil.which("graphlemon")
    beside = Path(sys.executable).parent / "graphlemon"
    if on_path and (not beside.exists() or Path(on_path).resolve() == beside.resolve()):
        return "graphlemon"
    if beside.exists():
        return str(beside)
    return f"{sys.executable} -m graphlemon"
