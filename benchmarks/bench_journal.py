"""One truth per task (issue 44): the long sweeps of the task's lease, kills and stops, on real processes.

* starts: `BENCH_JOURNAL_STARTS` (20) simultaneous starts of one queued task — `graphlemon resume` processes and "Run it now"
  requests to a console on 127.0.0.1 — must make one run; every other start is refused with the holder named.
* kills: `BENCH_JOURNAL_KILLS` (50) runs killed with SIGKILL at a random moment, each then resumed to done. One in three is
  killed inside a console launch (the console's `graphlemon resume`, its process group), one in three right after a
  resumer took over the killed holder's lease, the rest as `graphlemon run` processes. Counted: double runs (a
  sampler watching, every 50 ms, how many live processes hold a lease of the task at once: more than one is a double
  run), duplicated records, lost work (a task not done after its resume), work records (runs, artifacts, bugs) against
  an uninterrupted run, and tokens re-spent (a turn cut inside its model call is paid again: its answer never came).
* stops: `BENCH_JOURNAL_STOPS` (20) stops at random moments (`graphlemon stop` semantics, asked in-process the moment it is
  drawn), then `graphlemon resume`: done, stages repeated, tokens re-spent.

The calc goal of the acceptance tests (two units, scripted, labelled so: the loop's plumbing, not a model's work).
Printed, never judged. `BENCH_SMOKE=1`: 3 starts, 1 kill (inside a console launch), 1 stop.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

from bench_logs import CALC, GIT_ENV, fresh_repo
from bench_resume import duplicates, records
from smoke import sized

STARTS = int(os.environ.get("BENCH_JOURNAL_STARTS", sized(20, 3)))
KILLS = int(os.environ.get("BENCH_JOURNAL_KILLS", sized(50, 1)))
STOPS = int(os.environ.get("BENCH_JOURNAL_STOPS", sized(20, 1)))
GOAL = "Build calc"
GRAPHLEMON = [sys.executable, "-m", "graphlemon"]


def work(repo: Path) -> dict:
    return {name: len(records(repo, f"{name}.ndjson")) for name in ("runs", "artifacts", "bugs")}


def tokens(repo: Path) -> int:
    return sum(u["input_tokens"] + u["output_tokens"] for u in records(repo, "usage.ndjson"))


def task_of(repo: Path) -> str | None:
    tasks = records(repo, "tasks.ndjson")
    return tasks[0]["task_id"] if tasks else None


def status_of(repo: Path) -> str | None:
    events = records(repo, "tasks.ndjson")
    return events[-1]["status"] if events else None


def env() -> dict:
    return {**os.environ, **GIT_ENV}


def run_proc(repo: Path) -> subprocess.Popen:
    return subprocess.Popen([*GRAPHLEMON, "run", GOAL, "--project", str(repo), "--playbook", str(CALC / "playbook.yaml"),
                             "--engine", "direct", "--quiet"], env=env(), start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip


def resume(repo: Path, task_id: str) -> dict:
    out = subprocess.run([*GRAPHLEMON, "resume", task_id, "--project", str(repo), "--engine", "direct", "--quiet",
                          "--json"], env=env(), capture_output=True, text=True)  # fmt: skip
    return json.loads(out.stdout) if out.stdout.strip() else {"status": "error", "stderr": out.stderr[-500:]}


def killed(pid: int) -> None:
    from graphlemon.processes import pid_alive

    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 30
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.01)


class Sampler:
    """Every 50 ms: how many live processes hold a lease of the task at once (from the journal and the process
    table); the most ever seen."""

    def __init__(self, repo: Path) -> None:
        self.repo, self.most, self._stop = repo, 0, threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        from graphlemon.processes import pid_alive

        while not self._stop.wait(0.05):
            held: dict[str, int] = {}
            for e in records(self.repo, "leases.ndjson"):
                if e["event"] in ("taken", "taken_over", "adopted", "handed") and e.get("pid"):
                    held[e["lease_id"]] = e["pid"]
                elif e["event"] == "released":
                    held.pop(e["lease_id"], None)
            pids = {p for p in held.values() if pid_alive(p) and not _is_console(p)}
            self.most = max(self.most, len(pids))

    def stop(self) -> int:
        self._stop.set()
        self.thread.join(2)
        return self.most


def _is_console(pid: int) -> bool:
    return pid == os.getpid()  # the console of this benchmark holds a lease only while it starts a run


class Console:
    def __init__(self, tmp: Path) -> None:
        from graphlemon.console.app import ConsoleSettings
        from graphlemon.console.project_registry import ProjectRegistry
        from graphlemon.console.server import BackgroundServer

        self.registry = ProjectRegistry(tmp / "console-config")
        self.server = BackgroundServer(ConsoleSettings(token="b" * 32, registry=self.registry)).start()

    def run(self, repo: Path, task_id: str, action_id: str) -> tuple[int, dict]:
        from graphlemon.console.app import TOKEN_HEADER
        from graphlemon.project import open_project

        handle = open_project(repo)
        self.registry.register(handle)
        url = f"{self.server.url}/api/projects/{handle.project_id}/tasks/{task_id}/run"
        request = urllib.request.Request(url, data=json.dumps({"action_id": action_id}).encode(), method="POST",
                                         headers={"Content-Type": "application/json", TOKEN_HEADER: "b" * 32,
                                                  "Origin": self.server.url})  # fmt: skip
        try:
            with urllib.request.urlopen(request, timeout=60) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())


def queued(tmp: Path) -> tuple[Path, str]:
    from graphlemon.project import open_project
    from graphlemon.stages.session import LoopConfig
    from graphlemon.taskboard import TaskBoard

    repo = fresh_repo(tmp, CALC / "repo", env())
    handle = open_project(repo)
    task = TaskBoard(handle.ledger).create(GOAL)
    LoopConfig.record(handle.state_dir, task.task_id, executor="scripted", playbook=CALC / "playbook.yaml")
    return repo, task.task_id


def wait_done(repo: Path, timeout: float = 900) -> str | None:
    deadline = time.monotonic() + timeout
    while status_of(repo) not in ("done", "blocked_pending_human", "abandoned") and time.monotonic() < deadline:
        time.sleep(0.5)
    return status_of(repo)


# -- the three sweeps ---------------------------------------------------------------------------------------------


def starts(tmp: Path, console: Console) -> None:
    repo, task_id = queued(tmp)
    at = time.time() + 4.0
    code = ("import os, sys, time; time.sleep(max(0, float(sys.argv[1]) - time.time())); "
            "os.execv(sys.executable, [sys.executable, '-m', 'graphlemon', *sys.argv[2:]])")  # fmt: skip
    n_cli = STARTS // 2
    clis = [subprocess.Popen([sys.executable, "-c", code, str(at), "resume", task_id, "--project", str(repo),
                              "--engine", "direct", "--quiet", "--json"], env=env(), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for _ in range(n_cli)]  # fmt: skip
    answers: list = []

    def click(i: int) -> None:
        time.sleep(max(0.0, at - time.time()))
        answers.append(console.run(repo, task_id, f"tab-{i}"))

    threads = [threading.Thread(target=click, args=(i,)) for i in range(STARTS - n_cli)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    outs = [p.communicate(timeout=900) for p in clis]
    final = wait_done(repo)
    said = [err for _, err in outs if "error[TASK_HELD]" in err] + [
        b["error"]["message"] for s, b in answers if s == 409 and b["error"]["code"] == "TASK_HELD"]  # fmt: skip
    named = sum(f"task {task_id} is run by " in x and " since " in x for x in said)
    won = sum(p.returncode == 0 for p in clis) + sum(s == 200 for s, _ in answers)
    runs = [e for e in records(repo, "leases.ndjson") if e["event"] in ("taken", "taken_over", "adopted")
            and not str(e.get("holder", "")).startswith("console:")]  # fmt: skip
    print(f"starts: {STARTS} at once ({n_cli} graphlemon resume, {STARTS - n_cli} console requests): {won} ran, "
          f"{len(said)} refused ({named} naming the holder and since when), {len(runs)} run lease(s) in the journal, "
          f"task {final}, duplicated records {duplicates(repo)}", flush=True)  # fmt: skip


def uninterrupted(tmp: Path) -> dict:
    """What the calc goal writes and spends run once without a kill or a stop."""
    clean = fresh_repo(tmp, CALC / "repo", env())
    assert run_proc(clean).wait() == 0
    return {"work": work(clean), "tokens": tokens(clean)}


def kills(tmp: Path, console: Console, rng: random.Random, base: dict) -> None:
    totals = Counter()
    started = time.monotonic()
    for i in range(KILLS):
        kind = ("console launch", "take-over", "graphlemon run")[i % 3]
        repo = fresh_repo(tmp, CALC / "repo", env())
        sampler = Sampler(repo)
        proc = run_proc(repo)
        delay = rng.uniform(0.5, 12.0)
        try:
            proc.wait(timeout=delay if kind == "graphlemon run" else rng.uniform(0.5, 4.0))
        except subprocess.TimeoutExpired:
            killed(proc.pid)
        proc.wait()
        task_id = task_of(repo)
        if task_id is None:  # killed before the task existed: start it again
            assert run_proc(repo).wait() is not None
            task_id = task_of(repo)
        if kind != "graphlemon run" and status_of(repo) != "done":
            status, body = console.run(repo, task_id, f"k-{i}")
            if status == 200:
                pid = int(body["run"]["ref"])
                if kind == "take-over":  # right after it took the killed holder's lease over
                    deadline = time.monotonic() + 60
                    while not any(e["event"] == "adopted" and e.get("pid") == pid
                                  for e in records(repo, "leases.ndjson")) and time.monotonic() < deadline:  # fmt: skip
                        time.sleep(0.005)
                else:  # somewhere inside the console's run
                    time.sleep(rng.uniform(0.2, 8.0))
                killed(pid)
        final = resume(repo, task_id)["status"] if status_of(repo) != "done" else "done"
        most = sampler.stop()
        r = {"double": int(most > 1), "dup": duplicates(repo), "lost": int(final != "done"),
             "work": work(repo) != base["work"], "respent": max(0, tokens(repo) - base["tokens"])}  # fmt: skip
        totals.update(r)
        print(f"  kill {i + 1:2d} ({kind:<14}): {final:<22} double runs {r['double']}  duplicates {r['dup']}  "
              f"work records {'DIFFER' if r['work'] else 'equal'}  tokens re-spent {r['respent']}", flush=True)  # fmt: skip
    print(f"kills: {KILLS} in {time.monotonic() - started:.0f} s: double runs {totals['double']}, duplicated records "
          f"{totals['dup']}, lost work {totals['lost']}, work records differing from an uninterrupted run "
          f"{totals['work']}, tokens re-spent {totals['respent']} (uninterrupted: {base['tokens']} tokens)", flush=True)  # fmt: skip


def stops(tmp: Path, rng: random.Random, base: dict) -> None:
    from graphlemon.devloop.stopping import stop_task
    from graphlemon.errors import ErrorCode, GraphLemonError
    from graphlemon.project import open_project

    base_tokens = base["tokens"]
    totals = Counter()
    started = time.monotonic()
    for i in range(STOPS):
        repo = fresh_repo(tmp, CALC / "repo", env())
        proc = run_proc(repo)
        time.sleep(rng.uniform(0.5, 10.0))
        task_id = task_of(repo)
        outcome = "ended before the stop"
        if task_id is not None and proc.poll() is None:
            try:
                outcome = stop_task(open_project(repo), task_id, by="a person (bench)").outcome
            except GraphLemonError as exc:  # the task ended while its process was exiting: nothing to stop
                if exc.code != ErrorCode.INVALID_TRANSITION:
                    raise
        proc.wait()
        task_id = task_of(repo)
        stopped = status_of(repo) == "blocked_pending_human"
        done_before = {e["node_exec_id"] for e in records(repo, "nodes.ndjson") if e["status"] == "done"}
        seen = len(records(repo, "nodes.ndjson"))
        final = resume(repo, task_id)["status"] if status_of(repo) != "done" else "done"
        repeated = sum(1 for e in records(repo, "nodes.ndjson")[seen:] if e["node_exec_id"] in done_before
                       and e["status"] == "running")  # fmt: skip
        r = {"stopped": int(stopped), "repeated": repeated, "respent": max(0, tokens(repo) - base_tokens),
             "dup": duplicates(repo), "not_done": int(final != "done")}  # fmt: skip
        totals.update(r)
        print(f"  stop {i + 1:2d}: {outcome:<22} {'blocked (stopped_by_person)' if stopped else 'ran to its end':<27} "
              f"resumed: {final:<8} stages repeated {repeated}  tokens re-spent {r['respent']}  duplicates {r['dup']}",
              flush=True)  # fmt: skip
    print(f"stops: {STOPS} in {time.monotonic() - started:.0f} s: {totals['stopped']} stopped at a safe point "
          f"(the others ended first), not done after resume {totals['not_done']}, stages repeated {totals['repeated']}, "
          f"tokens re-spent {totals['respent']}, duplicated records {totals['dup']}", flush=True)  # fmt: skip


def main() -> None:
    rng = random.Random(int(os.environ.get("BENCH_SEED", "2026")))
    with tempfile.TemporaryDirectory(prefix="bench-journal-") as tmp:
        os.environ.setdefault("GRAPHLEMON_CONFIG_DIR", str(Path(tmp) / "config"))
        console = Console(Path(tmp))
        try:
            starts(Path(tmp), console)
            base = uninterrupted(Path(tmp))
            kills(Path(tmp), console, rng, base)
            stops(Path(tmp), rng, base)
        finally:
            console.server.stop()


if __name__ == "__main__":
    main()
