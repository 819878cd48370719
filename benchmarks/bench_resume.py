"""Kill-and-resume reliability: the demo killed with SIGKILL at a random moment, then resumed.

For each run: start `graphlemon run` on a fresh copy of examples/snake in its own process
group, SIGKILL the group after a random delay, `graphlemon resume` the task, and count:
  * finished stage executions repeated (a node that was `done` before the kill started again),
  * duplicate ledger records (the same run id, call id, artifact version or timeline event twice),
  * tokens re-spent (usage beyond what an uninterrupted run of the same playbook spends).
Goal: every run ends `done`; 0 / 0 / 0. A run that misses it is copied to $TMPDIR/bench-resume-kept-N. `BENCH_KILLS` (default 50) and `BENCH_ENGINE` (prefect) set the size.
`BENCH_SMOKE=1`: the two-unit calc goal of the acceptance tests instead of the snake demo, one kill within the first
4 s, engine direct.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from bench_devloop import GIT_ENV
from bench_logs import CALC, SNAKE, fresh_repo
from smoke import sized

KILLS = int(os.environ.get("BENCH_KILLS", sized(50, 1)))
ENGINE = os.environ.get("BENCH_ENGINE", sized("prefect", "direct"))
LATEST_KILL = sized(40.0, 4.0)  # seconds after the start: each kill lands at a random moment before it
# the run killed and resumed: the snake demo, or (smoke size) the acceptance tests' two-unit calc goal
LOOP, GOAL = sized((SNAKE, "Implement a snake game"), (CALC, "Build calc"))
CLEAN_TOKENS = None  # measured once with an uninterrupted run


def records(repo: Path, name: str) -> list[dict]:
    path = repo / ".graphlemon" / name
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def duplicates(repo: Path) -> int:
    """Records written twice: the same run id, call id, artifact version or timeline event."""
    dup = 0
    for name, key in (("runs.ndjson", ("run_id",)), ("usage.ndjson", ("call_id",)),
                      ("artifacts.ndjson", ("artifact_type", "unit_id", "version")),
                      ("timeline.ndjson", ("event", "unit_id", "ref", "summary"))):  # fmt: skip
        counts = Counter(tuple(r.get(k) for k in key) for r in records(repo, name))
        dup += sum(c - 1 for c in counts.values())
    return dup


def graphlemon(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "graphlemon", *args], env=env, capture_output=True, text=True)


def one(tmp: Path, delay: float) -> dict:
    env = {
        **os.environ,
        **GIT_ENV,
        "PREFECT_HOME": str(tmp / "prefect-home"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    }
    repo = fresh_repo(tmp, LOOP / "repo", env)
    proc = subprocess.Popen(
        [sys.executable, "-m", "graphlemon", "run", GOAL, "--project", str(repo), "--playbook",
         str(LOOP / "playbook.yaml"), "--max-unit-attempts", "2", "--engine", ENGINE, "--quiet"],  # fmt: skip
        env=env, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        proc.wait(timeout=delay)
        killed = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        killed = True
    done_before = {(e["node_exec_id"]) for e in records(repo, "nodes.ndjson") if e["status"] == "done"}
    n_nodes = len(records(repo, "nodes.ndjson"))
    tasks = records(repo, "tasks.ndjson")
    if not tasks:  # killed before the task existed: nothing to resume, start it again
        out = graphlemon("run", GOAL, "--project", str(repo), "--playbook", str(LOOP / "playbook.yaml"),
                         "--max-unit-attempts", "2", "--engine", ENGINE, "--quiet", "--json", env=env)  # fmt: skip
    else:
        status = json.loads(graphlemon("status", "--project", str(repo), "--json", env=env).stdout)["tasks"][0][
            "status"
        ]
        out = graphlemon("resume", tasks[0]["task_id"], "--project", str(repo), "--engine", ENGINE, "--quiet", "--json", env=env) \
            if status != "done" else subprocess.CompletedProcess([], 0, json.dumps({"status": "done"}), "")  # fmt: skip
    final = json.loads(out.stdout) if out.stdout.strip() else {"status": "error", "stderr": out.stderr[-500:]}
    after = records(repo, "nodes.ndjson")[n_nodes:]
    repeated = sum(1 for e in after if e["node_exec_id"] in done_before and e["status"] == "running")
    dup = duplicates(repo)
    tokens = sum(u["input_tokens"] + u["output_tokens"] for u in records(repo, "usage.ndjson"))
    return {"status": final.get("status"), "killed": killed, "repeated": repeated, "duplicates": dup, "tokens": tokens,
            "repo": repo, "delay": delay}  # fmt: skip


def main() -> None:
    rng = random.Random(int(os.environ.get("BENCH_SEED", "2026")))
    with tempfile.TemporaryDirectory(prefix="bench-resume-") as tmp:
        tmp_path = Path(tmp)
        clean = one(tmp_path, delay=3600)
        assert clean["status"] == "done" and not clean["killed"], clean
        started = time.monotonic()
        print(f"uninterrupted run: {clean['tokens']} tokens; killing {KILLS} runs at random moments ({ENGINE} engine)")
        results = []
        for i in range(KILLS):
            r = one(tmp_path, delay=rng.uniform(1.0, LATEST_KILL))
            r["respent"] = max(0, r["tokens"] - clean["tokens"])
            results.append(r)
            print(f"  run {i + 1:2d}: {r['status']:<22} killed={r['killed']!s:<5} repeated={r['repeated']} "
                  f"duplicates={r['duplicates']} tokens re-spent={r['respent']}", flush=True)  # fmt: skip
            if r["status"] != "done" or r["repeated"] or r["duplicates"] or r["respent"]:
                kept = Path(tempfile.gettempdir()) / f"bench-resume-kept-{i + 1}"
                shutil.copytree(r["repo"], kept, symlinks=True, dirs_exist_ok=True)
                print(f"          kept for a look: {kept} (killed after {r['delay']:.1f} s)", flush=True)
        done = sum(r["status"] == "done" for r in results)
        print(f"\n{done}/{KILLS} finished done ({sum(r['killed'] for r in results)} were killed mid-run), "
              f"in {time.monotonic() - started:.0f} s")  # fmt: skip
        print(f"stage executions repeated: {sum(r['repeated'] for r in results)}")
        print(f"duplicate ledger records : {sum(r['duplicates'] for r in results)}")
        print(f"tokens re-spent          : {sum(r['respent'] for r in results)}")


if __name__ == "__main__":
    main()
