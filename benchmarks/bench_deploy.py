"""The deploy supervisor (REQ-15), measured in one run (printed, never asserted):

1. the time of each phase of a real blue-green deployment of a copy of GraphLemon's repository: stage (worktree
   checkout), start (graphlemon serve to its first /healthz), health check (canary task: the scripted snake demo
   run by the candidate, engine `direct`), cutover (the haproxy runtime-API switch), monitoring window, finalize;
2. two rollbacks: to a still-running previous instance (a proxy switch), and after finalize (the previous
   instance restarted from its directory, then the switch);
3. a load client sending GET /healthz through the proxy every 20 ms the whole time: requests, failures, and the
   switch gap it saw (last answer from one commit to the first from the next), beside its own request interval.

Needs Debian's haproxy (`make fixtures`). `BENCH_DEPLOY_ENGINE=prefect` runs the canary as a devloop flow run
(ephemeral Prefect server unless PREFECT_API_URL is set). `BENCH_SMOKE=1`: the second deployment reuses the first
one's canary run (the same code tree), and the monitoring window is 0.5 s.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from smoke import sized

from graphlemon.deploy.supervisor import DeployConfig, Supervisor
from graphlemon.project import init_project

ROOT = Path(__file__).resolve().parents[1]
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=bench@graphlemon.local"]
INTERVAL = 0.02


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def copy_repo(dest: Path) -> Path:
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.split("\n")  # fmt: skip
    for rel in files:
        if rel and not rel.startswith("tests/") and not rel.endswith(".png") and (ROOT / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dest / rel)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "GraphLemon"]):
        subprocess.run([*GIT, *args], cwd=dest, check=True, capture_output=True)
    return dest


def docs_commit(repo: Path, text: str) -> str:
    with open(repo / "README.md", "a") as fh:
        fh.write(f"\n{text}\n")
    subprocess.run([*GIT, "commit", "-q", "-am", text], cwd=repo, check=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


class Load(threading.Thread):
    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.port, self.ok, self.failed, self.served = port, 0, 0, []
        self.halt = threading.Event()

    def run(self) -> None:
        next_at = time.monotonic()
        while not self.halt.is_set():
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=5) as resp:
                    self.served.append((time.monotonic(), json.loads(resp.read())["commit"]))
                    self.ok += 1
            except Exception:
                self.failed += 1
            next_at += INTERVAL
            self.halt.wait(max(0.0, next_at - time.monotonic()))

    def gaps(self) -> list[float]:
        return [t1 - t0 for (t0, c0), (t1, c1) in zip(self.served, self.served[1:], strict=False) if c0 != c1]


def phase_ms(dep, status: str) -> int | None:
    return next((e.duration_ms for e in dep.timeline if e.status == status), None)


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-deploy-"))
    os.environ.setdefault("GRAPHLEMON_CONFIG_DIR", str(work / "config"))
    os.environ.setdefault("PREFECT_HOME", str(work / "prefect"))
    repo = copy_repo(work / "graphlemon")
    handle = init_project(repo).project
    config = DeployConfig(public_port=free_port(), monitor_window_s=sized(2, 0.5), monitor_interval_s=sized(0.5, 0.25),
                          start_timeout_s=120, canary_engine=os.environ.get("BENCH_DEPLOY_ENGINE", "direct"),
                          reuse_canary=sized(False, True))  # fmt: skip
    sup = Supervisor(handle, config)
    t = time.monotonic()
    sup.bootstrap("HEAD")
    bootstrap_s = time.monotonic() - t
    load = Load(config.public_port)
    load.start()
    rows: list[tuple[str, float]] = [("bootstrap (first instance + haproxy)", bootstrap_s)]
    try:
        candidate = docs_commit(repo, "bench candidate")
        t = time.monotonic()
        dep = sup.stage(candidate)
        rows.append(("stage (git worktree of the commit)", time.monotonic() - t))
        t = time.monotonic()
        dep = sup.health_check(dep.deployment_id)
        total = time.monotonic() - t
        start_ms = phase_ms(dep, "health_check_running") or 0
        rows += [("start (serve -> first /healthz 200)", start_ms / 1000),
                 ("health check: canary task", total - start_ms / 1000)]  # fmt: skip
        t = time.monotonic()
        dep = sup.cutover(dep.deployment_id)
        rows.append(("cutover (runtime-API switch + check)", time.monotonic() - t))
        t = time.monotonic()
        rolled = sup.rollback(dep.deployment_id, by="bench")
        rows.append(("rollback to the running previous instance", time.monotonic() - t))
        assert rolled.status == "rolled_back", rolled.status
        candidate = docs_commit(repo, "bench candidate 2")
        dep = sup.stage(candidate)
        dep = sup.health_check(dep.deployment_id)
        dep = sup.cutover(dep.deployment_id)
        t = time.monotonic()
        dep = sup.monitor(dep.deployment_id)
        rows.append((f"monitoring window ({config.monitor_window_s:g} s) + finalize", time.monotonic() - t))
        t = time.monotonic()
        rolled = sup.rollback(dep.deployment_id, by="bench")
        rows.append(("rollback after finalize (restart previous + switch)", time.monotonic() - t))
        time.sleep(0.3)
    finally:
        load.halt.set()
        load.join(10)
        sup.shutdown()
    print(f"{'phase':<52} {'seconds':>9}")
    for name, secs in rows:
        print(f"{name:<52} {secs:>9.3f}")
    gaps = load.gaps()
    print(f"\nload client: {load.ok} ok, {load.failed} failed, one request every {INTERVAL * 1000:.0f} ms")
    print(f"switches seen: {len(gaps)}; switch gap ms: {', '.join(f'{g * 1000:.1f}' for g in gaps)} "
          f"(goal <= 100 ms); worst gap / request interval = {max(gaps, default=0) / INTERVAL:.2f}")  # fmt: skip
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
