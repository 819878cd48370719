"""The Tester self-check (docs/tester.md: ten items and two more rules) -> violations.

A tester turn whose output has violations is not accepted: the stage retries the
turn once with the violations as feedback, then marks the node failed.

 1  the tests hold at least N cases (N = criteria + required contract status codes)
 2  result.json validates against its schema (TesterResult)
 3  every failure has a non-empty hint
 4  every bug in bugs_opened / bugs_transitioned is in bugs.ndjson
 5  nothing was written outside the sandbox
 6  no whole-module mock of the unit under test (vi.mock / jest.mock / mock.patch of the unit's own module)
 7  the todo list, if the turn kept one, is all done (a turn needs none)
 8  the timeline has unit_tested and test_failed / test_passed for this run
 9  the run finished inside the 60 s cap (not timed out)
10  acceptance_coverage == 1.0
 +  at least one negative case per criterion; no real network in tests
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from pydantic import ValidationError

from .. import beneath
from ..agents.sandbox import glob_match
from ..errors import GraphLemonError
from ..ledger import Ledger
from ..models import BugEvent, TimelineEvent
from ..units import UnitSpec
from .tester_coverage import criteria_without_negative
from .tester_models import TesterOutput, TesterResult

_TEST_FN = re.compile(r"^\s*(?:async\s+)?def\s+test\w*\s*\(|\b(?:it|test)\s*\(\s*['\"`]", re.MULTILINE)
_REMOTE_URL = re.compile(
    r"https?://(?!localhost\b|127\.0\.0\.1\b|0\.0\.0\.0\b|\[::1\]|testserver\b|example\.invalid\b)[\w.-]+"
)
TEST_FILE_MAX_BYTES = 4 * 1024 * 1024
SKIP_DIRS = frozenset({".git", "node_modules", ".venv", "__pycache__", ".pytest_cache", ".graphlemon"})
_NETWORK_CALL = re.compile(
    r"\b(?:requests|httpx|urllib\.request|aiohttp)\.(?:get|post|put|delete|urlopen|request)\s*\(|\bsocket\.create_connection\("
)


def unit_modules(root: Path, code_paths: Iterable[str]) -> list[str]:
    """Import names of every Python module a unit owns: `todo/` -> `todo`, `todo.app`; `snake/collision.py` ->
    `snake.collision`."""
    names: set[str] = set()
    for raw in code_paths:
        kind = _kind(root, raw.rstrip("/"))
        files = [f for f in _files(root, raw.rstrip("/")) if f.endswith(".py")] if kind == "dir" else \
            [raw] if raw.endswith(".py") else []  # fmt: skip
        if kind == "dir":
            names.add(".".join(PurePosixPath(raw.rstrip("/")).parts))
        for f in files:
            rel = PurePosixPath(f).with_suffix("")
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            names.add(".".join(parts))
    return sorted(n for n in names if n)


def whole_module_mocks(test_source: str, modules: list[str], code_paths: list[str]) -> list[str]:
    """Mocks that replace a whole unit module (a mock of one attribute or of an external module is fine)."""
    found = []
    for module in modules:
        quoted = rf"['\"]{re.escape(module)}['\"]"
        patterns = [
            rf"(?:mock\.)?patch\(\s*{quoted}",  # unittest.mock.patch("pkg.mod") — the module itself
            rf"patch\.dict\(\s*sys\.modules\s*,\s*\{{\s*{quoted}",
            rf"sys\.modules\[\s*{quoted}\s*\]\s*=",
            rf"monkeypatch\.setitem\(\s*sys\.modules\s*,\s*{quoted}",
        ]
        found += [f"mocks the whole unit module {module}" for pat in patterns if re.search(pat, test_source)]
    for stem in {PurePosixPath(p).with_suffix("").as_posix() for p in code_paths if "*" not in p}:
        base = re.escape(PurePosixPath(stem).name)
        if re.search(rf"\b(?:vi|jest)\.mock\(\s*['\"`][^'\"`]*\b{base}(?:\.[jt]sx?)?['\"`]", test_source):
            found.append(f"mocks the whole unit module {stem} (vi.mock / jest.mock)")
    return found


def count_tests(sources: Iterable[str]) -> int:
    return sum(len(_TEST_FN.findall(s)) for s in sources)


def network_uses(test_source: str) -> list[str]:
    hits = [f"real network URL {m.group(0)}" for m in _REMOTE_URL.finditer(test_source)]
    hits += [f"network call {m.group(0).rstrip('(')}" for m in _NETWORK_CALL.finditer(test_source)]
    return hits


def self_check(
    *,
    result: TesterResult | dict,
    output: TesterOutput,
    spec: UnitSpec,
    required_statuses: list[int],
    test_files: dict[str, str],
    code_paths: list[str],
    modules: list[str],
    ledger: Ledger,
    task_id: str | None,
    sandbox_violations: list[str],
    todo_statuses: list[str] | None,
    test_names: list[str],
) -> list[str]:
    violations: list[str] = []
    needed = len(spec.acceptance_criteria) + len(required_statuses)
    have = max(count_tests(test_files.values()), output.summary.total)
    if have < needed:  # 1
        violations.append(f"1: the tests hold {have} case(s); at least {needed} are needed (criteria + status codes)")
    try:  # 2
        TesterResult.model_validate(result if isinstance(result, dict) else result.model_dump())
    except ValidationError as exc:
        violations.append(f"2: result.json does not validate: {exc.errors()[0]['msg']}")
    for f in output.failures:  # 3
        if not f.hint.strip():
            violations.append(f"3: failure {f.test!r} has no hint")
    events = [e for e in ledger.read_as("bug", BugEvent)]
    opened = {e.bug_id for e in events if e.event == "open"}
    moved = {(e.bug_id, e.status) for e in events if e.event == "transition"}
    for bug_id in output.bugs_opened:  # 4
        if bug_id not in opened:
            violations.append(f"4: bug {bug_id} is in bugs_opened but not in bugs.ndjson")
    for t in output.bugs_transitioned:
        if (t.id, t.to) not in moved:
            violations.append(f"4: bug {t.id} -> {t.to} is in bugs_transitioned but not in bugs.ndjson")
    violations += [f"5: wrote outside the sandbox: {v}" for v in sandbox_violations]  # 5
    for name, source in sorted(test_files.items()):  # 6 and the network rule
        violations += [f"6: {name} {m}" for m in whole_module_mocks(source, modules, code_paths)]
        violations += [f"network: {name} uses {n}" for n in network_uses(source)]
    if todo_statuses:  # 7
        if any(s not in ("done", "skipped") for s in todo_statuses):
            violations.append(f"7: the todo list is not all done ({todo_statuses.count('pending')} pending)")
    timeline = {
        e.event for e in ledger.read_as("timeline", TimelineEvent) if e.ref == output.run_id and e.task_id == task_id
    }
    if "unit_tested" not in timeline or not timeline & {"test_failed", "test_passed"}:  # 8
        violations.append("8: the timeline lacks unit_tested / test_failed / test_passed for this run")
    if (
        (isinstance(result, TesterResult) and result.timed_out) or output.duration_ms >= 60_000 and not output.crashed
    ):  # 9
        violations.append(f"9: the run took {output.duration_ms} ms (cap 60000)")
    if output.acceptance_coverage < 1.0 and not output.crashed:  # 10
        violations.append(f"10: acceptance_coverage is {output.acceptance_coverage:.2f}, not 1.0")
    if not output.crashed:
        violations += [
            f"negative: criterion {c} has no negative case" for c in criteria_without_negative(spec, test_names)
        ]
    return violations


def read_test_files(root: Path, test_paths: list[str]) -> dict[str, str]:
    """The unit's test sources (files under its declared test paths)."""
    files: dict[str, str] = {}
    for raw in test_paths:
        kind = _kind(root, raw)
        if kind == "file":
            candidates = [raw]
        elif kind == "dir":
            candidates = _files(root, raw)
        else:  # a glob: matched against the work tree's files (links never followed)
            candidates = [f for f in _files(root, "") if glob_match(raw, f)]
        for rel in candidates:
            if PurePosixPath(rel).suffix in (".py", ".js", ".ts", ".mjs", ".cjs", ".jsx", ".tsx"):
                try:
                    files[rel] = beneath.read_text(root, rel, errors="replace", max_bytes=TEST_FILE_MAX_BYTES)
                except (OSError, GraphLemonError):
                    continue  # a link, a FIFO or a huge file: not read (the run's own checks judge it)
    return files


def _kind(root: Path, rel: str) -> str:
    try:
        return beneath.kind(root, rel)
    except GraphLemonError:
        return "absent"


def _files(root: Path, rel: str) -> list[str]:
    """The regular files below `rel` in the work tree, sorted (no link followed; caches and dependencies skipped)."""
    try:
        return beneath.walk_files(root, rel, skip=SKIP_DIRS)[0]
    except (OSError, GraphLemonError):
        return []
