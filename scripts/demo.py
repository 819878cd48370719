"""`make demo` / `make demo-skill`: `graphlemon demo` from the source checkout (graphlemon/cli/demo_cmd.py, the same
code an installed wheel runs), on a temp copy of examples/snake, offline, with the scripted executor."""

from __future__ import annotations

import sys

from graphlemon.cli import main
from graphlemon.cli.demo_cmd import run_demo

if __name__ == "__main__":
    sys.exit(run_demo(main, sys.argv[1] if len(sys.argv) > 1 else "playbook.yaml"))
