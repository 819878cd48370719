"""Which test runners a package.json script really starts, following `npm run` chains.

`"test": "npm run eslint && nyc npm run test-spec"` with `"test-spec": "mocha spec -R spec"`
starts eslint and mocha: the result is `["eslint", "mocha"]`. `pre`/`post` scripts count too
(npm runs them around the script). Used to pick the parser for the runner actually invoked.
"""

from __future__ import annotations

import re
from pathlib import Path

from .detect import PackageJson
from .script_runners import MAX_DEPTH, called_script, commands, runners_of


def script_runners(run_dir: Path, script: str = "test") -> list[str]:
    """The runners `npm run SCRIPT` starts in `run_dir`, in the order they appear."""
    pkg = PackageJson.read(run_dir)
    return [] if pkg is None else runners_of(pkg.scripts, script)


def runner_arguments(run_dir: Path, runner: str, script: str = "test") -> list[str] | None:
    """The arguments the project's script passes to `runner` (`mocha -u tdd --require x test` → `-u tdd
    --require x test`), from the first command of `npm run SCRIPT`'s chain that starts it; None if none does."""
    pkg = PackageJson.read(run_dir)
    if pkg is None:
        return None
    return _arguments_of(pkg.scripts, script, runner, set(), 0)


def _arguments_of(scripts: dict[str, str], name: str, runner: str, seen: set[str], depth: int) -> list[str] | None:
    if name in seen or depth > MAX_DEPTH:
        return None
    seen.add(name)
    for part in (f"pre{name}", name, f"post{name}"):
        for words in commands(scripts.get(part) or ""):
            names = [Path(w).name for w in words]
            for alias in (runner, f"_{runner}"):
                if alias in names:
                    return words[names.index(alias) + 1 :]
            called = called_script(words)
            found = _arguments_of(scripts, called, runner, seen, depth + 1) if called else None
            if found is not None:
                return found
    return None


def script_of_command(command: str) -> str | None:
    """`npm test` → `test`, `npm run tests-only` → `tests-only`; None for anything else."""
    match = re.search(r"\bnpm\s+(?:(?P<t>test|t)\b|run(?:-script)?\s+(?P<name>[\w:.-]+))", command)
    if not match:
        return None
    return "test" if match["t"] else match["name"]
