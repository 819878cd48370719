"""DevLoop benchmark: wall time of the snake demo, and Prefect's orchestration overhead.

The same loop (examples/snake, scripted executor) runs side by side in one session:
with the domain functions called directly (`--engine direct`), through the Prefect flow,
subflows and tasks with an ephemeral API server (`--engine prefect`, its start-up
included), and through Prefect against an already running `prefect server start` (the
per-stage orchestration cost alone). Printed, never asserted. `BENCH_SMOKE=1`: once each, direct and against the
running server (no ephemeral-server variant: one Prefect server start instead of two).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from smoke import sized

ROOT = Path(__file__).resolve().parents[1]
SNAKE = ROOT / "examples" / "snake"
REPEAT = int(os.environ.get("BENCH_DEVLOOP_REPEAT", sized(2, 1)))
VARIANTS = sized(("direct", "prefect", "server"), ("direct", "server"))
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


def cpu_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(engine: str, tmp: Path, api_url: str | None = None) -> tuple[float, float, dict, int]:
    repo = fresh_repo(tmp)
    env = {
        **os.environ,
        **GIT_ENV,
        "PREFECT_HOME": str(tmp / "prefect-home"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    }
    if api_url:
        env["PREFECT_API_URL"] = api_url
    started, cpu = time.perf_counter(), cpu_children()
    out = subprocess.run(
        [sys.executable, "-m", "graphlemon", "run", "Implement a snake game", "--project", str(repo), "--playbook",
         str(SNAKE / "playbook.yaml"), "--max-unit-attempts", "2", "--engine", engine, "--json"],  # fmt: skip
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    elapsed, cpu = time.perf_counter() - started, cpu_children() - cpu
    task = json.loads(out.stdout) if out.stdout.strip() else {"status": f"error: {out.stderr[-300:]}"}
    if task.get("status") != "done":
        raise SystemExit(f"{engine} run did not end done (exit {out.returncode}): {task}\n{out.stderr[-3000:]}")
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


@contextmanager
def running_server(tmp: Path):
    """`prefect server start` on a free port (its own PREFECT_HOME), stopped with its process group."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/api"
    env = {**os.environ, "PREFECT_HOME": str(tmp / "server-home"), "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
           "PREFECT_UI_ENABLED": "false"}  # fmt: skip
    proc = subprocess.Popen([sys.executable, "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port",
                             str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2):
                    break
            except OSError:
                time.sleep(0.5)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)


def main() -> None:
    # byte-compiled as an install leaves it (this machine sets PYTHONDONTWRITEBYTECODE: every run would compile)
    code = [str(ROOT / d) for d in ("graphlemon", "flows", "tasks", "blocks")]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *code], check=True, stdout=subprocess.DEVNULL)
    print(f"load average {os.getloadavg()[0]:.1f} (1 min), {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="bench-devloop-") as tmp, running_server(Path(tmp)) as api_url:
        tmp_path = Path(tmp)
        results: dict[str, list[float]] = {v: [] for v in VARIANTS}
        cpu: dict[str, list[float]] = {v: [] for v in VARIANTS}
        stage_runs = 0
        for _ in range(REPEAT):  # interleaved, so all three see the same machine load
            for variant in VARIANTS:
                engine = "direct" if variant == "direct" else "prefect"
                elapsed, used, task, stage_runs = run(engine, tmp_path, api_url if variant == "server" else None)
                assert task.get("status") == "done", task
                results[variant].append(elapsed)
                cpu[variant].append(used)
        orchestrated = prefect_runs(tmp_path, api_url) // REPEAT
        best = {v: min(times) for v, times in results.items()}
        direct, served = best["direct"], best["server"]
        print(f"snake demo loop (scripted executor, {stage_runs} stage executions, best of {REPEAT}):")
        print(f"  domain functions called directly : {direct:6.1f} s")
        if "prefect" in best:
            prefect = best["prefect"]
            print(f"  through the Prefect flow and tasks: {prefect:6.1f} s   (ephemeral API server start-up included)")
            print(f"  ratio prefect / direct            : {prefect / direct:.2f}")
            print(f"  orchestration overhead per stage  : {(prefect - direct) / stage_runs * 1000:.0f} ms "
                  f"(start-up spread over the {stage_runs} stage executions)")  # fmt: skip
        else:
            print("  through the Prefect flow and tasks: not run at smoke size (BENCH_SMOKE=1)")
        print(f"  against a running Prefect server  : {served:6.1f} s   ratio {served / direct:.2f}")
        print(f"  per Prefect run (task or subflow) : {(served - direct) / max(1, orchestrated) * 1000:.0f} ms "
              f"over {orchestrated} task and subflow runs")  # fmt: skip
        direct_cpu = min(cpu["direct"])
        print("  CPU seconds (the command and its children; the running server's own CPU not counted):")
        print("    " + " · ".join(f"{v} {min(c):.1f}" + (f" ({min(c) / direct_cpu:.2f}×)" if v != "direct" else "")
                                  for v, c in cpu.items()) + "   (steadier than wall time on a busy machine)")  # fmt: skip


if __name__ == "__main__":
    main()
