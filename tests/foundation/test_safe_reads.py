"""Every host read of a place a sandbox could write goes through the safe reader (graphlemon/beneath.py).

An AST scan of the modules that read sandbox output (a run's scratch folder, a work tree, the planner's drafts,
git's files in a work tree): a raw read there — `open()`, `Path.read_text/read_bytes/open`, a listing (`iterdir`,
`glob`, `rglob`, `os.walk`, `os.scandir`, `os.listdir`), `json.load`, `tomllib.load`, a `shutil` copy — fails this
test, so a new one cannot slip in. The few raw reads left are listed below, each with why the place it reads is
not one a sandbox can write.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "graphlemon"

# modules whose every read is of sandbox output (or may be): a raw read anywhere in them is a finding
READERS = (
    "testrun/runner.py", "testrun/command_run.py", "testrun/detect.py", "testrun/lastfailed.py",
    "testrun/rust_source.py", "testrun/python_env.py", "testrun/npm_scripts.py", "testrun/frameworks/native.py",
    "stages/planner.py", "stages/validator.py", "stages/validation_suite.py", "stages/tester_selfcheck.py",
    "agents/effects.py", "agents/kept_files.py", "agents/worktree.py", "agents/git_guard.py", "agents/git_ignored.py",
    "agents/prompt.py", "agents/tools/file_read.py", "agents/tools/file_edit.py", "agents/tools/fs_guard.py",
    "staged_links.py", "gitrun.py", "git_config.py", "worktrees.py", "triage/evidence_check.py",
)  # fmt: skip
# single functions of larger modules that read a work tree
READER_FUNCTIONS = {"triage/run_context.py": ("read_code",)}
# (module, function) -> why its raw read is not of a place a sandbox writes
ALLOWED = {
    ("testrun/python_env.py", "_system_has_pytest"): "an interpreter installed on the machine, outside any work tree",
    ("agents/kept_files.py", "KeptState.content"): "GraphLemon's own private copy (0700 folder it made)",
    ("agents/kept_files.py", "unchanged"): "GraphLemon's own private copy of a kept file",
    ("agents/tools/fs_guard.py", "_umask"): "/proc/self/status of GraphLemon's own process",
    ("worktrees.py", "task_lock"): "the lock file in the ledger folder, which the sandbox never sees",
    ("worktrees.py", "Worktrees.recover"): "lists the task's worktrees folder in the ledger folder (hidden inside)",
    ("worktrees.py", "Worktrees._drop_stale_locks"): "names in git's admin folder, read-only inside the sandbox",
    ("stages/planner.py", "apply_sdd_patch"): "the SDD artifact in the ledger folder (the artifact store)",
    ("stages/validator.py", "_attribute"): "lists the task's worktrees folder in the ledger folder",
}
RAW_METHODS = {"read_text", "read_bytes", "open", "iterdir", "glob", "rglob"}
RAW_FUNCTIONS = {("os", "walk"), ("os", "scandir"), ("os", "listdir"), ("os", "fwalk"), ("json", "load"),
                 ("tomllib", "load"), ("shutil", "copy"), ("shutil", "copy2"), ("shutil", "copyfile"),
                 ("shutil", "copytree"), ("linecache", "getline"), ("linecache", "getlines")}  # fmt: skip
# the safe reader itself; the artifact store (the ledger folder); the bug tracker (`bugs.open` opens a bug)
SAFE_RECEIVERS = {"beneath", "artifacts", "bugs"}


class _Finder(ast.NodeVisitor):
    def __init__(self) -> None:
        self.scope: list[str] = []
        self.found: list[tuple[str, int, str]] = []  # (function, line, call)

    def _visit_scope(self, node) -> None:
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _visit_scope

    def visit_Call(self, node: ast.Call) -> None:
        call = _raw(node.func)
        if call is not None:
            self.found.append((".".join(self.scope), node.lineno, call))
        self.generic_visit(node)


def _raw(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name) and func.id == "open":
        return "open()"
    if isinstance(func, ast.Attribute):
        receiver = func.value
        name = receiver.id if isinstance(receiver, ast.Name) else receiver.attr if isinstance(receiver, ast.Attribute) else ""
        if (name, func.attr) in RAW_FUNCTIONS:
            return f"{name}.{func.attr}()"
        if func.attr in RAW_METHODS and name not in SAFE_RECEIVERS and name not in ("os", "re", "fnmatch"):
            return f".{func.attr}()"
    return None


def _raw_reads(module: str) -> list[tuple[str, int, str]]:
    finder = _Finder()
    finder.visit(ast.parse((ROOT / module).read_text(encoding="utf-8")))
    return finder.found


@pytest.mark.parametrize("module", READERS)
def test_a_module_that_reads_sandbox_output_reads_only_through_the_safe_reader(module):
    found = [(fn, line, call) for fn, line, call in _raw_reads(module) if (module, fn) not in ALLOWED]
    assert not found, f"graphlemon/{module}: raw reads of a place a sandbox can write (use graphlemon.beneath): {found}"


@pytest.mark.parametrize("module,functions", READER_FUNCTIONS.items())
def test_a_function_that_reads_a_work_tree_reads_only_through_the_safe_reader(module, functions):
    found = [(fn, line, call) for fn, line, call in _raw_reads(module) if fn.split(".")[-1] in functions]
    assert not found, f"graphlemon/{module}: {found}"


def test_every_exception_is_still_there_and_still_needed():
    """An allowed raw read that was removed or renamed is taken off the list (it would hide a new one)."""
    for module, function in ALLOWED:
        assert module in READERS, module
        assert any(fn == function for fn, _, _ in _raw_reads(module)), (module, function)


def test_the_scan_sees_a_raw_read():
    """The scan itself: each kind of raw read is found (a scan that finds nothing proves nothing)."""
    source = "\n".join([
        "import os, json, shutil", "def f(p, q):", "    open(p)", "    p.read_text()", "    q.root.read_bytes()",
        "    os.walk(p)", "    os.scandir(p)", "    json.load(p)", "    shutil.copy(p, q)", "    list(p.iterdir())",
        "    p.rglob('*')", "    beneath.read_text(p, q)",
    ])  # fmt: skip
    finder = _Finder()
    finder.visit(ast.parse(source))
    assert [call for _, _, call in finder.found] == [
        "open()", ".read_text()", ".read_bytes()", "os.walk()", "os.scandir()", "json.load()", "shutil.copy()",
        ".iterdir()", ".rglob()",
    ]
