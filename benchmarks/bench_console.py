"""The console, measured side by side in one run (printed, never asserted):

1. start-up: `graphlemon console` to its first HTTP answer, beside `graphlemon --help` (is Prefect imported? no);
2. ledger line appended -> node recoloured in headless Chromium: p50 / p95 over 200 transitions (goal p95 <= 0.5 s);
3. 100 WebSocket subscribers on one project while the scripted snake demo runs: every client counts every event,
   and the console process's CPU time per event;
4. a task with 20,000 ledger events: time to first paint of its graph, beside a task with 200.

Needs Debian's chromium (`make fixtures`). `BENCH_CONSOLE_QUICK=1` skips the demo run (3). `BENCH_SMOKE=1`: one
repetition, 10 transitions, 5 subscribers (1 s of idle) while a process appends 100 ledger events one by one
instead of the demo, 2,000 events for the big task.
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
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GRAPHLEMON = str(Path(sys.executable).parent / "graphlemon")

from smoke import sized  # noqa: E402

from graphlemon import lease as leases  # noqa: E402
from graphlemon.console.app import ConsoleSettings  # noqa: E402
from graphlemon.console.project_registry import ProjectRegistry  # noqa: E402
from graphlemon.console.server import BackgroundServer, free_port  # noqa: E402
from graphlemon.models import NodeEvent, TimelineEvent  # noqa: E402
from graphlemon.nodes import NodeTracker  # noqa: E402
from graphlemon.project import init_project  # noqa: E402
from graphlemon.taskboard import TaskBoard  # noqa: E402

REPEAT = sized(3, 1)
TRANSITIONS = sized(200, 10)
SUBSCRIBERS = sized(100, 5)
IDLE_SECONDS = sized(10.0, 1.0)
BIG_TASK = sized(20_000, 2_000)  # ledger events of the big task (first paint)
APPEND_EVENTS = """
import sys
from graphlemon.models import TimelineEvent
from graphlemon.project import open_project
from graphlemon.taskboard import TaskBoard
handle = open_project(sys.argv[1])
task_id = TaskBoard(handle.ledger).create("smoke").task_id
for i in range(99):
    handle.ledger.append(TimelineEvent(event="note", task_id=task_id, summary=f"line {i}"))
"""
DEMO = [GRAPHLEMON, "run", "Implement a snake game", "--engine", "direct", "--quiet", "--playbook",
        str(ROOT / "examples" / "snake" / "playbook.yaml"), "--max-unit-attempts", "2", "--project"]  # fmt: skip
# what the subscribers receive (a command, given the project's folder): the demo, or (smoke size) 100 appends
EVENT_SOURCE = sized(("the scripted snake demo", DEMO),
                     ("a process appending 100 ledger events", [sys.executable, "-c", APPEND_EVENTS]))  # fmt: skip
ENV = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "bench",
       "GIT_COMMITTER_EMAIL": "b@x", "PREFECT_SERVER_ANALYTICS_ENABLED": "false"}  # fmt: skip


def new_repo(parent: Path, name: str, source: Path | None = None) -> Path:
    repo = parent / name
    if source is not None:
        shutil.copytree(source, repo)
    else:
        repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True, env=ENV)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env=ENV)
    subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", "start"], cwd=repo, check=True, env=ENV)
    return repo


def wait_http(url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(url, timeout=2).read()
            return
        except urllib.error.HTTPError:
            return  # it answered (a read without the console's token is refused): the server is up
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def with_token(page, server):
    """A page holding the console's token cookie, as a person's browser does once it opened the printed URL (set
    before the first navigation, so the navigation measured is the page's own)."""
    page.context.add_cookies([{"name": "graphlemon_console", "value": server.settings.token, "url": server.url}])
    return page


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


# -- 1. start-up -------------------------------------------------------------------------------------------


def bench_startup(work: Path) -> None:
    env = {**ENV, "GRAPHLEMON_CONFIG_DIR": str(work / "cfg-startup")}
    helps, starts = [], []
    for _ in range(REPEAT):
        t0 = time.monotonic()
        subprocess.run([GRAPHLEMON, "--help"], env=env, capture_output=True, check=True)
        helps.append(time.monotonic() - t0)
        port = free_port()
        t0 = time.monotonic()
        proc = subprocess.Popen([GRAPHLEMON, "console", "--port", str(port)], env=env, cwd=work,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        try:
            wait_http(f"http://127.0.0.1:{port}/api/projects")
            starts.append(time.monotonic() - t0)
        finally:
            proc.terminate()
            proc.wait()
    probe = (
        "import sys, graphlemon.cli, graphlemon.console.app, graphlemon.console.server; print('prefect' in sys.modules)"
    )
    imported = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env).stdout.strip()
    print(f"start-up (median of {REPEAT}): graphlemon --help {statistics.median(helps):.2f} s | "
          f"graphlemon console to first answer {statistics.median(starts):.2f} s (goal <= 1 s) | "
          f"prefect imported: {imported}")  # fmt: skip


# -- 2. recolour latency -------------------------------------------------------------------------------------

OBSERVE = """() => { window.__changes = []; const svg = document.getElementById('graph');
  new MutationObserver(ms => { for (const m of ms) if (m.attributeName === 'data-status')
    window.__changes.push([m.target.getAttribute('data-status'), performance.timeOrigin + performance.now()]); })
  .observe(svg, {attributes: true, subtree: true, attributeFilter: ['data-status']}); }"""


def bench_recolour(work: Path, browser, n: int = TRANSITIONS) -> None:
    registry = ProjectRegistry(work / "cfg-recolour")
    handle = init_project(new_repo(work, "recolour")).project
    registry.register(handle)
    board = TaskBoard(handle.ledger)
    tid = board.create("recolour").task_id
    node_id = f"ne-{tid}-coder-u-r0"
    nodes = NodeTracker(handle.ledger)
    nodes.transition(node_id, "running", task_id=tid, stage="coder", unit_id="u")
    # a run (this process) holds the task, as `graphlemon run` does: with no holder the page shows live nodes stopped
    with leases.held(handle.ledger, tid, leases.Holder.here("graphlemon run")):
        _recolour(registry, browser, handle, tid, nodes, node_id, n)


def _recolour(registry, browser, handle, tid: str, nodes, node_id: str, n: int) -> None:
    server = BackgroundServer(ConsoleSettings(registry=registry)).start()
    try:
        page = with_token(browser.new_page(), server)
        page.goto(f"{server.url}/#/p/{handle.project_id}/t/{tid}")
        page.wait_for_selector("g.node[data-status=running]")
        page.evaluate(OBSERVE)
        cycle, latencies = ["reflecting", "retrying", "running"], []
        for i in range(n):
            status = cycle[i % 3]
            seen = page.evaluate("window.__changes.length")
            t0 = time.time() * 1000
            nodes.transition(node_id, status)
            deadline = time.monotonic() + 10
            while page.evaluate("window.__changes.length") <= seen:  # the page's CSP forbids wait_for_function's eval
                if time.monotonic() > deadline:
                    raise TimeoutError(f"transition {i} ({status}) never reached the page")
                time.sleep(0.005)
            changed_at = page.evaluate("n => window.__changes[n]", seen)
            assert changed_at[0] == status, changed_at
            latencies.append((changed_at[1] - t0) / 1000)
        page.close()
    finally:
        server.stop()
    print(f"ledger line -> node recoloured in Chromium, {n} transitions: p50 {pct(latencies, .5) * 1000:.0f} ms | "
          f"p95 {pct(latencies, .95) * 1000:.0f} ms | max {max(latencies) * 1000:.0f} ms (goal p95 <= 500 ms)")  # fmt: skip


# -- 3. 100 subscribers while the demo runs --------------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def subscribe_all(url: str, project_id: str, n: int, done: asyncio.Event, ready: list) -> list[int]:
    import websockets

    counts = [0] * n

    async def client(i: int) -> None:
        async with websockets.connect(url, max_size=None) as ws:
            await ws.send(json.dumps({"project": project_id}))
            first = json.loads(await ws.recv())
            assert first["type"] == "snapshot", first
            ready.append(i)
            while True:
                try:
                    msg = json.loads(await asyncio.wait_for(ws.recv(), timeout=0.5))
                except TimeoutError:
                    if done.is_set():
                        return
                    continue
                counts[i] += len(msg.get("events", []))

    await asyncio.gather(*(client(i) for i in range(n)))
    return counts


SUBS_TOKEN = "bench-console-" + "s" * 32


def bench_subscribers(work: Path, n: int = SUBSCRIBERS) -> None:
    repo = new_repo(work, "snake", ROOT / "examples" / "snake" / "repo")
    env = {**ENV, "GRAPHLEMON_CONFIG_DIR": str(work / "cfg-subs"), "GRAPHLEMON_CONSOLE_TOKEN": SUBS_TOKEN}
    subprocess.run([GRAPHLEMON, "init", str(repo)], env=env, check=True, capture_output=True)
    project_id = json.loads((repo / ".graphlemon" / "project.json").read_text())["project_id"]
    port = free_port()
    console = subprocess.Popen([GRAPHLEMON, "console", "--port", str(port), "--project", str(repo)], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        wait_http(f"http://127.0.0.1:{port}/api/projects")

        async def run() -> tuple[list[int], float, float]:
            done = asyncio.Event()
            ready: list[int] = []
            url = f"ws://127.0.0.1:{port}/ws?token={SUBS_TOKEN}"  # subscribers carry the console's token
            subs = asyncio.ensure_future(subscribe_all(url, project_id, n, done, ready))
            while len(ready) < n:  # everyone subscribed and has its snapshot
                await asyncio.sleep(0.1)
            await asyncio.sleep(1.0)
            idle0 = cpu_seconds(console.pid)
            await asyncio.sleep(IDLE_SECONDS)
            idle_rate = (cpu_seconds(console.pid) - idle0) / IDLE_SECONDS  # CPU seconds per second, n idle sockets
            cpu0, t0 = cpu_seconds(console.pid), time.monotonic()
            demo = await asyncio.create_subprocess_exec(*EVENT_SOURCE[1], str(repo), env=env,
                                                        stdout=asyncio.subprocess.DEVNULL,
                                                        stderr=asyncio.subprocess.DEVNULL)  # fmt: skip
            await demo.wait()
            await asyncio.sleep(1.5)  # the last lines reach everyone
            cpu = cpu_seconds(console.pid) - cpu0
            done.set()
            return await subs, cpu, time.monotonic() - t0, idle_rate

        counts, cpu, wall, idle_rate = asyncio.run(run())
    finally:
        console.terminate()
        console.wait()
    from graphlemon.console.feed import FOLLOWED_FILES

    events = sum(len((repo / ".graphlemon" / f).read_bytes().splitlines()) for f in FOLLOWED_FILES
                 if (repo / ".graphlemon" / f).exists())  # fmt: skip
    task_events = events  # the project was empty before the run
    complete = sum(c == task_events for c in counts)
    net = max(cpu - idle_rate * wall, 0.0)
    print(f"{n} subscribers during {EVENT_SOURCE[0]} ({wall:.0f} s, {task_events} ledger events): "
          f"{complete}/{n} clients received every event (min {min(counts)}, max {max(counts)}) | "
          f"console CPU {cpu:.2f} s = {cpu / max(task_events, 1) * 1000:.1f} ms per event; idle with {n} sockets "
          f"{idle_rate * 100:.1f} % of a core, so beyond idle {net / max(task_events, 1) * 1000:.1f} ms per event "
          f"({net / max(task_events * n, 1) * 1e6:.0f} µs per event per subscriber)")  # fmt: skip


# -- 4. first paint of a big task --------------------------------------------------------------------------------


def seed_task(handle, events: int) -> str:
    tid = TaskBoard(handle.ledger).create(f"{events} events").task_id
    batch, units = [], [f"u{i}" for i in range(8)]
    per_round = len(units) * 4 + 2
    rounds = max(1, events // (per_round * 2))
    for r in range(rounds):
        batch.append(NodeEvent(node_exec_id=f"ne-{tid}-planner-r{r}", task_id=tid, stage="planner", loop_round=r,
                               status="running"))  # fmt: skip
        batch.append(NodeEvent(node_exec_id=f"ne-{tid}-planner-r{r}", task_id=tid, stage="planner", loop_round=r,
                               status="done"))  # fmt: skip
        for u in units:
            nid = f"ne-{tid}-coder-{u}-r{r}"
            for status in ("running", "reflecting", "retrying", "done"):
                batch.append(NodeEvent(node_exec_id=nid, task_id=tid, stage="coder", unit_id=u, loop_round=r,
                                       status=status))  # fmt: skip
    while len(batch) < events:
        batch.append(TimelineEvent(event="note", task_id=tid, summary=f"line {len(batch)}"))
    handle.ledger.append(*batch[:events])
    return tid


def bench_first_paint(work: Path, browser) -> None:
    registry = ProjectRegistry(work / "cfg-paint")
    results = {}
    server = None
    try:
        for events in (200, BIG_TASK):
            handle = init_project(new_repo(work, f"paint{events}")).project
            registry.register(handle)
            tid = seed_task(handle, events)
            if server is None:
                server = BackgroundServer(ConsoleSettings(registry=registry)).start()
            times = []
            for _ in range(REPEAT):
                page = with_token(browser.new_page(), server)
                page.goto(f"{server.url}/#/p/{handle.project_id}/t/{tid}")
                page.wait_for_selector("body[data-painted]", timeout=60_000)
                times.append(float(page.get_attribute("body", "data-painted")) / 1000)  # ms since navigation
                nodes = page.evaluate("document.querySelectorAll('g.node').length")
                page.close()
            results[events] = (statistics.median(times), nodes)
    finally:
        if server is not None:
            server.stop()
    small, big = results[200], results[BIG_TASK]
    print(f"task page first paint of the graph (median of {REPEAT}, the first one parses the ledger): 200 events "
          f"{small[0]:.2f} s ({small[1]} nodes) | {BIG_TASK:,} events {big[0]:.2f} s ({big[1]} nodes) (goal <= 1 s)")  # fmt: skip


def chromium():
    from playwright.sync_api import sync_playwright

    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        raise SystemExit("bench_console: Debian's chromium is missing (make fixtures installs it)")
    pw = sync_playwright().start()
    return pw, pw.chromium.launch(executable_path=path, args=["--no-sandbox", "--disable-gpu"])


def main() -> int:
    socket.setdefaulttimeout(30)
    work = Path(tempfile.mkdtemp(prefix="graphlemon-bench-console-"))
    os.environ.update({k: v for k, v in ENV.items() if k.startswith("GIT_")})
    try:
        bench_startup(work)
        pw, browser = chromium()
        try:
            bench_recolour(work, browser)
            bench_first_paint(work, browser)
        finally:
            browser.close()
            pw.stop()
        if not os.environ.get("BENCH_CONSOLE_QUICK"):
            bench_subscribers(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
