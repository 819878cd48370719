"""Which test runners a package.json script really starts, following `npm run` chains.

`"test": "npm run eslint && nyc npm run test-spec"` with `"test-spec": "mocha spec -R spec"`
starts eslint and mocha: the result is `["eslint", "mocha"]`. `pre`/`post` scripts count too
(npm runs them around the script). Used to pick the parser for the runner actually invoked.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from .detect import PackageJson

RUNNERS = ("mocha", "tape", "tap", "node:test", "jest", "vitest", "ava", "pytest", "eslint")
_RUN_SCRIPT = re.compile(r"^(?:npm|pnpm|yarn)$")
_MAX_DEPTH = 6


def script_runners(run_dir: Path, script: str = "test") -> list[str]:
    """The runners `npm run SCRIPT` starts in `run_dir`, in the order they appear."""
    pkg = PackageJson.read(run_dir)
    if pkg is None:
        return []
    found: list[str] = []
    _walk(pkg.scripts, script, found, set(), 0)
    return found


def runner_arguments(run_dir: Path, runner: str, script: str = "test") -> list[str] | None:
    """The arguments the project's script passes to `runner` (`mocha -u tdd --require x test` → `-u tdd
    --require x test`), from the first command of `npm run SCRIPT`'s chain that starts it; None if none does."""
    pkg = PackageJson.read(run_dir)
    if pkg is None:
        return None
    return _arguments_of(pkg.scripts, script, runner, set(), 0)


def _arguments_of(scripts: dict[str, str], name: str, runner: str, seen: set[str], depth: int) -> list[str] | None:
    if name in seen or depth > _MAX_DEPTH:
        return None
    seen.add(name)
    for part in (f"pre{name}", name, f"post{name}"):
        for words in _commands(scripts.get(part) or ""):
            names = [Path(w).name for w in words]
            for alias in (runner, f"_{runner}"):
                if alias in names:
                    return words[names.index(alias) + 1 :]
            called = _called_script(words)
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


def _walk(scripts: dict[str, str], name: str, found: list[str], seen: set[str], depth: int) -> None:
    if name in seen or depth > _MAX_DEPTH:
        return
    seen.add(name)
    for part in (f"pre{name}", name, f"post{name}"):
        text = scripts.get(part)
        if text is None or (part != name and part in seen):
            continue
        for words in _commands(text):
            called = _called_script(words)
            if called is not None:
                _walk(scripts, called, found, seen, depth + 1)
            for runner in _runners_in(words):
                if runner not in found:
                    found.append(runner)


def _commands(text: str) -> list[list[str]]:
    """The simple commands of a script line (split at `&&`, `||`, `;`, `|`)."""
    try:
        tokens = shlex.split(text, posix=True)
    except ValueError:
        tokens = text.split()
    commands: list[list[str]] = [[]]
    for token in tokens:
        if token in ("&&", "||", ";", "|", "&"):
            commands.append([])
        else:
            commands[-1].append(token)
    return [c for c in commands if c]


def _called_script(words: list[str]) -> str | None:
    for i, word in enumerate(words[:-1]):
        if _RUN_SCRIPT.match(Path(word).name):
            rest = words[i + 1 :]
            if rest[0] in ("test", "t"):
                return "test"
            if rest[0] in ("run", "run-script") and len(rest) > 1:
                return rest[1]
    return None


def _runners_in(words: list[str]) -> list[str]:
    names = [Path(w).name for w in words]
    found = [r for r in RUNNERS if r in names and r != "node:test"]
    if "_mocha" in names and "mocha" not in found:
        found.append("mocha")
    if "node" in names and "--test" in words:
        found.append("node:test")
    return found
