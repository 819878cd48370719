"""`make demo`: copy examples/snake into a temp folder, make it a git repo, run GraphLemon on it."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def sh(*args: str, cwd: Path) -> None:
    print("$", " ".join(args), flush=True)
    subprocess.run(args, cwd=cwd, check=True)


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="graphlemon-demo-"))
    repo = work / "snake"
    shutil.copytree(ROOT / "examples" / "snake", repo)
    sh("git", "init", "-q", cwd=repo)
    sh("git", "-c", "user.name=demo", "-c", "user.email=demo@localhost", "add", "-A", cwd=repo)
    sh(
        "git",
        "-c",
        "user.name=demo",
        "-c",
        "user.email=demo@localhost",
        "commit",
        "-q",
        "-m",
        "initial snake repo",
        cwd=repo,
    )
    gl = str(BIN / "graphlemon")
    sh(gl, "init", str(repo), cwd=work)
    sh(gl, "bugs", "report", "--title", "demo: snake passes through the wall",
       "--description", "moving right at x=9 on a 10-wide board wraps to x=0 instead of ending the game", cwd=repo)  # fmt: skip
    sh(gl, "bugs", "list", cwd=repo)
    sh(gl, "status", cwd=repo)
    print(f"\ndemo project left in {repo}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
