"""Execution logs benchmark (REQ-13): what full node logging costs the loop, and live viewers under load.

1. The snake demo (scripted executor, `--engine direct`) with execution logs on and off
   (GRAPHLEMON_EXEC_LOGS=off), runs interleaved in one session: wall time side by side and the overhead ratio.
2. One node writing ~10 MB/s to its log, followed by 20 WebSocket viewers of a real `graphlemon console`
   process: the lag from a line written to the line received (p50 / p95 / max, per message, measured on the
   oldest line of each message) and the console's RSS before, during and after.

Printed, never asserted. BENCH_LOGS_REPEAT (default 1) runs per mode; BENCH_LOGS_SECONDS (default 10) of writing;
BENCH_LOGS_VIEWERS (default 20). BENCH_SMOKE=1: the two-unit calc goal of the acceptance tests instead of the snake
demo, 1 s of writing, 3 viewers.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from smoke import sized

ROOT = Path(__file__).resolve().parents[1]
SNAKE = ROOT / "examples" / "snake"
CALC = ROOT / "tests" / "acceptance" / "fixtures" / "calc"
# the loop run with logs on and off: the snake demo, or (smoke size) the acceptance tests' two-unit calc goal
LOOP_NAME, LOOP, GOAL = sized(
    ("the snake demo", SNAKE, "Implement a snake game"), ("the calc goal", CALC, "Build calc")
)
REPEAT = int(os.environ.get("BENCH_LOGS_REPEAT", "1"))
SECONDS = float(os.environ.get("BENCH_LOGS_SECONDS", sized(10, 1)))
VIEWERS = int(os.environ.get("BENCH_LOGS_VIEWERS", sized(20, 3)))
RATE = 10 * 1024 * 1024  # bytes per second
GIT_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "bench",
           "GIT_COMMITTER_EMAIL": "b@b"}  # fmt: skip


def fresh_repo(tmp: Path, source: Path, env: dict) -> Path:
    repo = tmp / f"repo-{time.monotonic_ns()}"
    shutil.copytree(source, repo)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "x"]):
        subprocess.run(["git", *args], cwd=repo, check=True, env=env)
    subprocess.run([sys.executable, "-m", "graphlemon", "init", str(repo)], check=True, env=env,
                   stdout=subprocess.DEVNULL)  # fmt: skip
    return repo


# -- 1. the loop with logging on and off ----------------------------------------------------------------------


def demo_run(tmp: Path, logging_on: bool) -> tuple[float, list[Path]]:
    env = {**os.environ, **GIT_ENV, "GRAPHLEMON_EXEC_LOGS": "on" if logging_on else "off"}
    repo = fresh_repo(tmp, LOOP / "repo", env)
    started = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-m", "graphlemon", "run", GOAL, "--project", str(repo), "--playbook",
         str(LOOP / "playbook.yaml"), "--max-unit-attempts", "2", "--engine", "direct", "--json"],
        env=env, capture_output=True, text=True,
    )  # fmt: skip
    elapsed = time.perf_counter() - started
    if out.returncode not in (0, 1):
        raise SystemExit(f"the demo failed ({out.returncode}): {out.stderr[-2000:]}")
    return elapsed, list((repo / ".graphlemon" / "logs").glob("*/node.log"))


def bench_loop(tmp: Path) -> None:
    times: dict[bool, list[float]] = {True: [], False: []}
    logs: list[Path] = []
    for i in range(REPEAT):
        for mode in (True, False) if i % 2 == 0 else (False, True):  # interleaved: drift hits both
            elapsed, found = demo_run(tmp, mode)
            times[mode].append(elapsed)
            logs = found or logs
    on, off = statistics.median(times[True]), statistics.median(times[False])
    sizes = (len(logs), sum(p.stat().st_size for p in logs))
    spent = replay_cost(tmp, logs)
    records = record_cost(tmp, len(logs))
    print(f"== {LOOP_NAME} (direct engine), execution logs on vs off ==")
    print(f"  logs on : median {on:6.2f} s  runs {', '.join(f'{t:.2f}' for t in times[True])}"
          f"  ({sizes[0]} node logs, {sizes[1] / 1024:.1f} KB)")  # fmt: skip
    print(f"  logs off: median {off:6.2f} s  runs {', '.join(f'{t:.2f}' for t in times[False])}")
    print(f"  overhead: {100 * (on / off - 1):+.1f} % (on / off = {on / off:.3f}; one machine, noisy: see below)")
    print(f"  the logging work itself: {spent * 1000:.1f} ms to write the run's {sum(1 for _ in _lines(logs)):,} "
          f"lines again through NodeLog (redaction included) = {100 * spent / off:.2f} % of the run")  # fmt: skip
    print(f"  the records: {records * 1000:.1f} ms to open and close {len(logs)} execution_log_file records "
          f"(locked, fsynced ledger appends) = {100 * records / off:.2f} % of the run")  # fmt: skip


def _lines(logs: list[Path]):
    for path in logs:
        yield from path.read_text().splitlines()


def record_cost(tmp: Path, n: int) -> float:
    """Seconds the node tracker's hook spends opening and closing `n` logs (the records and the files)."""
    from graphlemon.execlogs import NodeLogs
    from graphlemon.models import NodeEvent
    from graphlemon.project import open_project

    repo = fresh_repo(tmp, SNAKE / "repo", {**os.environ, **GIT_ENV})
    logs = NodeLogs(open_project(repo).ledger)
    started = time.perf_counter()
    for i in range(n):
        for status in ("running", "done"):
            logs.on_transition(NodeEvent(node_exec_id=f"ne-bench-coder-u{i}-r0", stage="coder", status=status))
    return time.perf_counter() - started


def replay_cost(tmp: Path, logs: list[Path]) -> float:
    """Seconds to write every line of the run's node logs again, one write each, as the loop did."""
    from graphlemon.execlogs import NodeLog

    lines = [line.split("] ", 1)[-1] for line in _lines(logs)]
    log = NodeLog(tmp / "replay" / "node.log")
    started = time.perf_counter()
    for line in lines:
        log.write("agent", line)
    log.close()
    return time.perf_counter() - started


# -- 2. 10 MB/s and 20 viewers --------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def writer(state_dir: str, nid: str, seconds: float) -> None:
    """(A process of its own.) ~RATE bytes/s for `seconds`: every 20 ms one write of the lines due, each line
    carrying its wall-clock write time; prints what it wrote as JSON."""
    from graphlemon.execlogs import writer as open_writer

    log = open_writer(Path(state_dir), nid)
    pad = "x" * 150
    tick, written, n = 0.02, 0, 0
    next_at = time.monotonic()
    end = next_at + seconds
    while time.monotonic() < end:
        due = int(RATE * tick)
        lines = []
        size = 0
        now = time.time()
        while size < due:
            text = f"t={now:.6f} n={n} {pad}"
            lines.append(text)
            size += len(text) + 5
            n += 1
        log.write_many("bench", lines)
        written += size
        next_at += tick
        time.sleep(max(0.0, next_at - time.monotonic()))
    print(json.dumps({"bytes": written, "lines": n}))


TOKEN = "bench-logs-" + "t" * 32  # the console's token, given to it and to its viewers


async def viewer(url: str, project_id: str, nid: str, lags: list[float], counts: list[int], stop: asyncio.Event):
    import websockets

    async with websockets.connect(url, max_size=None, origin=None) as ws:
        await ws.send(json.dumps({"project": project_id, "node": nid, "from": 0}))
        got = 0
        while not stop.is_set():
            try:
                raw = await asyncio.wait_for(ws.recv(), timeout=0.5)
            except TimeoutError:
                continue
            except websockets.ConnectionClosed:
                break
            received = time.time()
            if not isinstance(raw, bytes) or not raw.startswith(b'{"type": "lines"'):
                continue
            at = raw.find(b"t=")  # the oldest line of the message: its worst lag (no full decode: 200 MB/s of JSON)
            if at >= 0:
                lags.append(received - float(raw[at + 2 : raw.index(b" ", at)]))
            got += len(raw)
        counts.append(got)


async def follow_all(port: int, project_id: str, nid: str, seconds: float) -> tuple[list[float], list[int]]:
    lags: list[float] = []
    counts: list[int] = []
    stop = asyncio.Event()
    url = f"ws://127.0.0.1:{port}/ws/logs?token={TOKEN}"  # the viewers carry the console's token
    tasks = [asyncio.create_task(viewer(url, project_id, nid, lags, counts, stop)) for _ in range(VIEWERS)]
    await asyncio.sleep(seconds)
    stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    return lags, counts


def bench_viewers(tmp: Path) -> None:
    sys.path.insert(0, str(ROOT / "tests"))
    from logview_kit import RunningNode

    from graphlemon.project import open_project

    env = {**os.environ, **GIT_ENV, "GRAPHLEMON_CONFIG_DIR": str(tmp / "config"), "GRAPHLEMON_CONSOLE_TOKEN": TOKEN}
    repo = fresh_repo(tmp, SNAKE / "repo", env)
    handle = open_project(repo)
    node = RunningNode(handle).start()
    port = free_port()
    console = subprocess.Popen([sys.executable, "-m", "graphlemon", "console", "--port", str(port), "--project",
                                str(repo)], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or console.poll() is not None:
                    raise SystemExit("the console did not start") from None
                time.sleep(0.1)
        before = rss_kb(console.pid)
        console_cpu0, viewers_cpu0, wall0 = cpu_s(console.pid), time.process_time(), time.monotonic()
        write = subprocess.Popen([sys.executable, __file__, "--writer", str(handle.state_dir), node.nid,
                                  str(SECONDS)], env=env, stdout=subprocess.PIPE, text=True)  # fmt: skip
        samples: list[int] = []
        sampling = threading.Event()

        def sample() -> None:
            while not sampling.is_set():
                samples.append(rss_kb(console.pid))
                time.sleep(0.5)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        lags, counts = asyncio.run(follow_all(port, handle.project_id, node.nid, SECONDS + 1.0))
        console_cpu, viewers_cpu = cpu_s(console.pid) - console_cpu0, time.process_time() - viewers_cpu0
        wall = time.monotonic() - wall0
        stats = json.loads(write.communicate(timeout=60)[0].strip().splitlines()[-1])
        sampling.set()
        sampler.join()
        node.finish()
        time.sleep(1.0)
        after = rss_kb(console.pid)
    finally:
        console.terminate()
        try:
            console.wait(timeout=10)
        except subprocess.TimeoutExpired:
            console.kill()
            console.wait()
    lags.sort()
    pct = lambda q: lags[min(len(lags) - 1, int(q * len(lags)))] if lags else float("nan")  # noqa: E731
    size = log_size = (handle.state_dir / "logs" / node.nid / "node.log").stat().st_size
    print(f"== one node writing {RATE / 2**20:.0f} MB/s for {SECONDS:g} s, {VIEWERS} WebSocket viewers ==")
    print(f"  written : {stats['bytes'] / 2**20:.1f} MB ({stats['bytes'] / 2**20 / SECONDS:.1f} MB/s), "
          f"{stats['lines']:,} lines; log file {size / 2**20:.1f} MB")  # fmt: skip
    print(f"  received: per viewer min {min(counts) / 2**20:.1f} MB, max {max(counts) / 2**20:.1f} MB "
          f"({len(counts)} viewers)")  # fmt: skip
    print(f"  lag (line written -> received), {len(lags):,} messages: p50 {pct(0.5) * 1000:.0f} ms, "
          f"p95 {pct(0.95) * 1000:.0f} ms, max {lags[-1] * 1000 if lags else float('nan'):.0f} ms")  # fmt: skip
    print(f"  CPU over {wall:.1f} s: console {console_cpu:.1f} s, the {VIEWERS} viewers' process {viewers_cpu:.1f} s "
          f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")  # fmt: skip
    print(f"  console RSS: before {before / 1024:.1f} MB, peak during {max(samples) / 1024:.1f} MB, "
          f"after {after / 1024:.1f} MB (log {log_size / 2**20:.1f} MB)")  # fmt: skip


def main() -> None:
    if sys.argv[1:2] == ["--writer"]:
        writer(sys.argv[2], sys.argv[3], float(sys.argv[4]))
        return
    which = sys.argv[1:] or ["loop", "viewers"]
    with tempfile.TemporaryDirectory(prefix="bench-logs-") as tmp:
        if "viewers" in which:
            bench_viewers(Path(tmp))
        if "loop" in which:
            bench_loop(Path(tmp))


if __name__ == "__main__":
    main()
