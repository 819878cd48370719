"""The cost of the loop's git runner (graphlemon/gitrun.py) per call, beside plain git, measured side by side.

A repository of 2,000 tracked files (BENCH_SMOKE=1: 100) whose config reaches ten filter drivers, a textconv and an
fsmonitor through an include chain (`include.path` -> `includeIf "onbranch:..."` -> a file under the home). For
`git rev-parse HEAD` and `git status --porcelain`, prints the median wall time of one call through `gitrun.git`
(work tree check, the config listing — cached while its files are unchanged —, the emptied keys) and of the same
git command run plainly, their ratio, and the runner's own cost in milliseconds. Interleaved repetitions; medians.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from smoke import sized  # noqa: E402

from graphlemon import gitrun  # noqa: E402

TRACKED = sized(2_000, 100)
CALLS = sized(40, 5)
COMMANDS = (("rev-parse", "HEAD"), ("status", "--porcelain"))


def make_repo(top: Path) -> Path:
    root = top / "repo"
    root.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@b"}  # fmt: skip
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True)
    for i in range(TRACKED):
        path = root / "src" / f"pkg{i % 40}" / f"m{i}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"X = {i}\n")
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-qm", "init"], cwd=root, check=True, env=env)
    home = top / "home"
    home.mkdir()
    (home / "drivers.cfg").write_text("".join(f'[filter "f{i}"]\n\tclean = cat\n\tsmudge = cat\n' for i in range(10)))
    (top / "branch.cfg").write_text('[diff "d"]\n\ttextconv = cat\n[core]\n\tfsmonitor = true\n[include]\n'
                                    f"\tpath = {home / 'drivers.cfg'}\n")  # fmt: skip
    with open(root / ".git" / "config", "a") as fh:
        fh.write(f'[includeIf "onbranch:main"]\n\tpath = {top / "branch.cfg"}\n')
    return root


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-gitrun-") as tmp:
        root = make_repo(Path(tmp))
        plain_env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        print(f"{'command':<22} {'runner ms':>10} {'plain git ms':>13} {'ratio':>7} {'runner adds ms':>15}")
        for args in COMMANDS:
            gitrun.git(root, *args)  # the config listing is made once, then cached while its files are unchanged
            runner, plain = [], []
            for _ in range(CALLS):
                runner.append(timed(lambda args=args: gitrun.git(root, *args)))
                plain.append(timed(lambda args=args: subprocess.run(["git", *args], cwd=root, env=plain_env,
                                                                    capture_output=True, check=True)))  # fmt: skip
            r, p = statistics.median(runner) * 1000, statistics.median(plain) * 1000
            print(f"{' '.join(args):<22} {r:>10.2f} {p:>13.2f} {r / p:>7.2f} {r - p:>15.2f}")


if __name__ == "__main__":
    main()
