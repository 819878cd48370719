"""`make demo`: the DevLoop on a temp copy of examples/snake, offline, with the scripted executor.

The scripted executor replays examples/snake/playbook.yaml (`make demo-skill`: playbook-skill.yaml,
a skill iteration end to end, REQ-08): the demo shows GraphLemon's
plumbing and decisions (worktrees, real pytest runs, bugs, root-cause routing, Prefect,
the ledger), not a model's work. It passes `--executor scripted`, so it never calls a model,
even with ANTHROPIC_API_KEY set (`graphlemon run` without --playbook would use the model then).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GRAPHLEMON = str(Path(sys.executable).parent / "graphlemon")
GIT = ["git", "-c", "user.name=GraphLemon demo", "-c", "user.email=demo@graphlemon.local"]


def sh(*args: str, cwd: Path, check: bool = True) -> int:
    print(f"\n$ {' '.join(args)}", flush=True)
    return subprocess.run(args, cwd=cwd, check=check, env={**os.environ, "COLUMNS": os.environ.get("COLUMNS", "150")}).returncode


def run_command(repo: Path, playbook_name: str = "playbook.yaml") -> list[str]:
    """`graphlemon run` for the demo: the scripted executor named explicitly, so a key in the environment
    never turns the demo into paid model calls."""
    playbook = str(ROOT / "examples" / "snake" / playbook_name)
    return [GRAPHLEMON, "run", "Implement a snake game", "--project", str(repo), "--executor", "scripted",
            "--playbook", playbook, "--max-unit-attempts", "2"]  # fmt: skip


def main(argv: list[str]) -> int:
    name = argv[0] if argv else "playbook.yaml"
    # The demo's code comes from the playbook shipped with GraphLemon, not from a model: confined where bwrap works,
    # and on a machine without it run anyway (said loudly) instead of refused, as a real run is (docs/agents.md).
    os.environ.setdefault("GRAPHLEMON_TEST_CONFINEMENT", "auto")
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="graphlemon-demo-"))
    repo = work / "snake"
    shutil.copytree(ROOT / "examples" / "snake" / "repo", repo)
    subprocess.run([*GIT, "init", "-q", "-b", "main"], cwd=repo, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*GIT, "commit", "-q", "-m", "empty snake package"], cwd=repo, check=True)
    print("GraphLemon demo — SCRIPTED EXECUTOR (a replayed playbook, no model is called)")
    print(f"target repository: {repo}")
    sh(GRAPHLEMON, "init", str(repo), cwd=work)
    rc = sh(*run_command(repo, name), cwd=repo, check=False)
    sh("git", "log", "--oneline", "--graph", "-12", cwd=repo)
    sh(GRAPHLEMON, "bugs", "list", "--project", str(repo), cwd=repo)
    if name != "playbook.yaml":  # the skill demo: the audit log and the skills report
        sh(GRAPHLEMON, "skills", "log", "--project", str(repo), cwd=repo)
        sh(GRAPHLEMON, "report", "skills", "--project", str(repo), cwd=repo)
    print(f"\ndemo finished in {time.monotonic() - started:.1f} s; the project is left in {repo}")
    print(f"try: cd {repo} && graphlemon status && graphlemon report convergence")
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
