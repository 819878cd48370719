"""The cost of the claude_code git guard (graphlemon/agents/git_guard.py) around one turn, by the number of ignored files.

For a repository with 2,000 tracked files and 0 / 5,000 / 20,000 ignored files (a node_modules-like tree; BENCH_SMOKE=1:
100 tracked, 0 / 200 / 1,000 ignored), prints side by side (medians of interleaved repetitions):
  status    = the look the turn already took before (worktree.snapshot: `git status`)
  guard     = git_guard.capture() before the turn + restore_git() and judge_ignored() after it (nothing changed)
  ratio     = guard / status
A claude turn lasts seconds to minutes; the guard's cost is what this adds to each one.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from smoke import sized  # noqa: E402

from graphlemon.agents import git_guard, git_ignored, worktree  # noqa: E402
from graphlemon.agents.executor_seam import SandboxPolicy  # noqa: E402
from graphlemon.agents.sandbox import Sandbox  # noqa: E402

REPETITIONS = sized(5, 1)
TRACKED = sized(2_000, 100)
IGNORED = sized((0, 5_000, 20_000), (0, 200, 1_000))


def make_repo(root: Path, ignored: int) -> Path:
    root.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    for i in range(TRACKED):
        path = root / "src" / f"pkg{i % 40}" / f"m{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"X = {i}\n")
    (root / ".gitignore").write_text("node_modules/\n")
    for i in range(ignored):
        path = root / "node_modules" / f"dep{i % 200}" / f"f{i}.js"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"module.exports = {i};\n")
    env = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"}
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-qm", "init"], cwd=root, check=True, env={**env, "PATH": "/usr/bin:/bin"})
    return root


def timed(fn, *args) -> float:
    started = time.perf_counter()
    fn(*args)
    return time.perf_counter() - started


def guard(root: Path, sandbox: Sandbox) -> None:
    before = git_guard.capture(root)
    assert git_guard.restore_git(before) == []
    assert git_ignored.judge_ignored(before, sandbox).findings == []


def main() -> None:
    print(f"{'ignored files':>14} {'status s':>9} {'guard s':>9} {'ratio':>7}")
    with tempfile.TemporaryDirectory(prefix="bench-git-guard-") as tmp:
        for ignored in IGNORED:
            root = make_repo(Path(tmp) / f"r{ignored}", ignored)
            sandbox = Sandbox(SandboxPolicy(root=root, writable=["tests/**"]))

            status, guarded = [], []
            for _ in range(REPETITIONS):
                status.append(timed(worktree.snapshot, root))
                guarded.append(timed(guard, root, sandbox))
            s, g = statistics.median(status), statistics.median(guarded)
            print(f"{ignored:>14,} {s:>9.3f} {g:>9.3f} {g / s:>7.1f}")


if __name__ == "__main__":
    main()
