"""Which test runners an npm script starts, from a package.json's `scripts` alone (no file access).

`"test": "npm run eslint && nyc npm run test-spec"` with `"test-spec": "mocha spec -R spec"` starts
eslint and mocha: `runners_of(scripts, "test")` is `["eslint", "mocha"]`. `pre`/`post` scripts count too
(npm runs them around the script). Shared by detection (which runner the project's own test command
starts) and the npm-test variant (which parser reads its output).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

RUNNERS = ("mocha", "tape", "tap", "node:test", "jest", "vitest", "ava", "pytest", "eslint")
_RUN_SCRIPT = re.compile(r"^(?:npm|pnpm|yarn)$")
MAX_DEPTH = 6


def runners_of(scripts: dict[str, str], script: str = "test") -> list[str]:
    """The runners `npm run SCRIPT` starts, in the order they appear."""
    found: list[str] = []
    _walk(scripts, script, found, set(), 0)
    return found


def _walk(scripts: dict[str, str], name: str, found: list[str], seen: set[str], depth: int) -> None:
    if name in seen or depth > MAX_DEPTH:
        return
    seen.add(name)
    for part in (f"pre{name}", name, f"post{name}"):
        text = scripts.get(part)
        if text is None or (part != name and part in seen):
            continue
        for words in commands(text):
            called = called_script(words)
            if called is not None:
                _walk(scripts, called, found, seen, depth + 1)
            for runner in _runners_in(words):
                if runner not in found:
                    found.append(runner)


def commands(text: str) -> list[list[str]]:
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


def called_script(words: list[str]) -> str | None:
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
