"""DevLoop benchmark: wall time of the snake demo, and Prefect's orchestration overhead.

The same loop (examples/snake, scripted executor) runs side by side in one session, interleaved so all variants
see the same machine load:

- `direct`: the domain functions called directly (`--engine direct`);
- `temporary`: through the Prefect flow, subflows and tasks with Prefect's temporary server, started by each command
  (`GRAPHLEMON_PREFECT_SERVER=temporary`, its start-up included);
- `reused`: what `graphlemon run` does by default with no Prefect API configured: GraphLemon's local server, started
  by the first run on the machine (that run is printed apart, its start-up included) and reused by every run after.

Printed, never asserted. `BENCH_SMOKE=1`: the two-unit calc goal of the acceptance tests instead of the snake demo,
once each, direct and reused (the reused server's first start is still printed; no temporary-server variant: one
Prefect server start instead of two).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_logs import GOAL, LOOP, LOOP_NAME  # the snake demo, or (smoke size) the acceptance tests' calc goal
from smoke import sized

ROOT = Path(__file__).resolve().parents[1]
REPEAT = int(os.environ.get("BENCH_DEVLOOP_REPEAT", sized(2, 1)))
VARIANTS = sized(("direct", "temporary", "reused"), ("direct", "reused"))
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "b@b",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "b@b",
}


def fresh_repo(tmp: Path) -> Path:
    repo = tmp / f"{LOOP.name}-{time.monotonic_ns()}"
    shutil.copytree(LOOP / "repo", repo)
    env = {**os.environ, **GIT_ENV}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "x"]):
        subprocess.run(["git", *args], cwd=repo, check=True, env=env)
    subprocess.run([sys.executable, "-m", "graphlemon", "init", str(repo)], check=True, stdout=subprocess.DEVNULL)
    return repo


def cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(variant: str, tmp: Path) -> tuple[float, float, dict, int]:
    repo = fresh_repo(tmp)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_API_")}
    env.update({
        **GIT_ENV,
        "PREFECT_HOME": str(tmp / "prefect-home"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "GRAPHLEMON_CONFIG_DIR": str(tmp / "config"),  # the reused server's folder: this session's own
        "GRAPHLEMON_PREFECT_SERVER": "temporary" if variant == "temporary" else "reused",
    })  # fmt: skip
    engine = "direct" if variant == "direct" else "prefect"
    started, cpu = time.perf_counter(), cpu_children()
    out = subprocess.run(
        [sys.executable, "-m", "graphlemon", "run", GOAL, "--project", str(repo), "--playbook",
         str(LOOP / "playbook.yaml"), "--max-unit-attempts", "2", "--engine", engine, "--json"],  # fmt: skip
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    elapsed, cpu = time.perf_counter() - started, cpu_children() - cpu
    task = json.loads(out.stdout) if out.stdout.strip() else {"status": f"error: {out.stderr[-300:]}"}
    if task.get("status") != "done":
        raise SystemExit(f"{variant} run did not end done (exit {out.returncode}): {task}\n{out.stderr[-3000:]}")
    nodes = (repo / ".graphlemon" / "nodes.ndjson").read_text().splitlines()
    stage_runs = sum(1 for line in nodes if '"running"' in line)
    return elapsed, cpu, task, stage_runs


def prefect_runs(tmp: Path, api_url: str) -> int:
    """Task runs plus subflow runs the running server recorded (what the orchestration paid for)."""
    code = (
        "from prefect.client.orchestration import get_client\n"
        "with get_client(sync_client=True) as c:\n"
        "    n, offset = 0, 0\n"
        "    while batch := c.read_task_runs(limit=200, offset=offset):\n"
        "        n, offset = n + len(batch), offset + len(batch)\n"
        "    print(n + c.count_flow_runs())\n"
    )
    env = {**os.environ, "PREFECT_API_URL": api_url, "PREFECT_HOME": str(tmp / "prefect-home")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    return int(out.stdout.strip() or 0)


def reused_server(tmp: Path) -> dict:
    out = subprocess.run([sys.executable, "-m", "graphlemon", "server", "status", "--json"], capture_output=True,
                         text=True, env={**os.environ, "GRAPHLEMON_CONFIG_DIR": str(tmp / "config")}, check=True)  # fmt: skip
    return json.loads(out.stdout)


def stop_reused_server(tmp: Path) -> None:
    subprocess.run([sys.executable, "-m", "graphlemon", "server", "stop"], capture_output=True,
                   env={**os.environ, "GRAPHLEMON_CONFIG_DIR": str(tmp / "config")})  # fmt: skip


def main() -> None:
    # byte-compiled as an install leaves it (this machine sets PYTHONDONTWRITEBYTECODE: every run would compile)
    code = [str(ROOT / d) for d in ("graphlemon", "flows", "tasks", "blocks")]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *code], check=True, stdout=subprocess.DEVNULL)
    print(f"load average {os.getloadavg()[0]:.1f} (1 min), {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="bench-devloop-") as tmp:
        tmp_path = Path(tmp)
        try:
            report(tmp_path)
        finally:
            stop_reused_server(tmp_path)


def report(tmp: Path) -> None:
    first, first_cpu, _, _ = run("reused", tmp)  # starts the reused server: the first run on a machine
    results: dict[str, list[float]] = {v: [] for v in VARIANTS}
    cpu: dict[str, list[float]] = {v: [] for v in VARIANTS}
    stage_runs = 0
    for _ in range(REPEAT):
        for variant in VARIANTS:
            elapsed, used, task, stage_runs = run(variant, tmp)
            results[variant].append(elapsed)
            cpu[variant].append(used)
    orchestrated = prefect_runs(tmp, reused_server(tmp)["url"]) // (REPEAT + 1)
    best = {v: min(times) for v, times in results.items()}
    direct, reused = best["direct"], best["reused"]
    print(f"{LOOP_NAME} loop (scripted executor, {stage_runs} stage executions, best of {REPEAT}):")
    print(f"  domain functions called directly    : {direct:6.1f} s")
    if "temporary" in best:
        temporary = best["temporary"]
        print(f"  Prefect, a temporary server per run : {temporary:6.1f} s   ratio {temporary / direct:.2f}"
              "   (its start-up included)")  # fmt: skip
    else:
        print("  Prefect, a temporary server per run : not run at smoke size (BENCH_SMOKE=1)")
    print(f"  Prefect, the reused local server    : {reused:6.1f} s   ratio {reused / direct:.2f}"
          "   (every run after the first)")  # fmt: skip
    print(f"    its first run (starts the server) : {first:6.1f} s   ratio {first / direct:.2f}")
    print(f"  per Prefect run (task or subflow)   : {(reused - direct) / max(1, orchestrated) * 1000:.0f} ms "
          f"over {orchestrated} task and subflow runs")  # fmt: skip
    direct_cpu = min(cpu["direct"])
    print("  CPU seconds (the command and its children; the reused server's own CPU not counted):")
    print("    " + " · ".join(f"{v} {min(c):.1f}" + (f" ({min(c) / direct_cpu:.2f}×)" if v != "direct" else "")
                              for v, c in cpu.items()) + f" · first reused {first_cpu:.1f}"
          "   (steadier than wall time on a busy machine)")  # fmt: skip


if __name__ == "__main__":
    main()
