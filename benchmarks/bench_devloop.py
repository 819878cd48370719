"""DevLoop benchmark: wall time of the snake demo, and Prefect's orchestration overhead.

The same loop (examples/snake, scripted executor) runs side by side in one session:
once with the domain functions called directly (`--engine direct`) and once through
the Prefect flow and tasks (`--engine prefect`, an ephemeral API server included).
Printed, never asserted.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SNAKE = ROOT / "examples" / "snake"
REPEAT = int(os.environ.get("BENCH_DEVLOOP_REPEAT", "2"))
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "b@b",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "b@b",
}


def fresh_repo(tmp: Path) -> Path:
    repo = tmp / f"snake-{time.monotonic_ns()}"
    shutil.copytree(SNAKE / "repo", repo)
    env = {**os.environ, **GIT_ENV}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "x"]):
        subprocess.run(["git", *args], cwd=repo, check=True, env=env)
    subprocess.run([sys.executable, "-m", "graphlemon", "init", str(repo)], check=True, stdout=subprocess.DEVNULL)
    return repo


def run(engine: str, tmp: Path) -> tuple[float, dict, int]:
    repo = fresh_repo(tmp)
    env = {
        **os.environ,
        **GIT_ENV,
        "PREFECT_HOME": str(tmp / "prefect-home"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    }
    started = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "graphlemon", "run", "Implement a snake game", "--project", str(repo), "--playbook",
         str(SNAKE / "playbook.yaml"), "--max-unit-attempts", "2", "--engine", engine, "--json"],  # fmt: skip
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    elapsed = time.perf_counter() - started
    task = json.loads(out.stdout) if out.stdout.strip() else {"status": f"error: {out.stderr[-300:]}"}
    stage_runs = sum(
        1 for line in (repo / ".graphlemon" / "nodes.ndjson").read_text().splitlines() if '"running"' in line
    )
    return elapsed, task, stage_runs


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-devloop-") as tmp:
        tmp_path = Path(tmp)
        results: dict[str, list[float]] = {"direct": [], "prefect": []}
        stage_runs = 0
        for _ in range(REPEAT):  # interleaved, so both see the same machine load
            for engine in ("direct", "prefect"):
                elapsed, task, stage_runs = run(engine, tmp_path)
                assert task.get("status") == "done", task
                results[engine].append(elapsed)
        direct, prefect = min(results["direct"]), min(results["prefect"])
        print(f"snake demo loop (scripted executor, {stage_runs} stage executions, best of {REPEAT}):")
        print(f"  domain functions called directly : {direct:6.1f} s")
        print(f"  through the Prefect flow and tasks: {prefect:6.1f} s   (ephemeral API server start-up included)")
        print(f"  ratio prefect / direct            : {prefect / direct:.2f}")
        print(f"  orchestration overhead per stage  : {(prefect - direct) / stage_runs * 1000:.0f} ms "
              f"(start-up spread over the {stage_runs} stage executions)")  # fmt: skip


if __name__ == "__main__":
    main()
