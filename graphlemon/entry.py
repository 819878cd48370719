"""The `graphlemon` program: `graphlemon test … --json` on its lean path, everything else on the typer app."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    from .test_command import wants_lean

    if wants_lean(args):
        from .test_command import main as lean_test

        lean_test(args)
    from .cli import main as full

    full(args)
