"""What an agent turn costs, measured in one run (printed, never asserted).

1. Prompt size per role: the snake goal run end to end through the conformance fake model
   (tests/fakes/conformance.py: it does exactly what each rendered prompt says) on the anthropic
   backend, against the local fake Messages server. Per role: its turns and model calls, the
   cacheable prefix of its first request (skill + tools + output schema, then the shared documents),
   its first message (the per-unit part, never cached), the input tokens the run sent uncached and
   read from the cache, and the largest tool result it got (characters; the cap is 16,000). Tokens
   are estimated at 4 characters each, as the fake server counts them.
2. Executor overhead per role turn: the same turn — write one test file, read it back, submit a
   structured output — through each backend, in a fresh git repository:

* scripted: the playbook replays the two tool calls (no model);
* anthropic: the real SDK against the local fake Messages server (two API calls:
  tool use, then submit_output), so the figure is our loop + SDK + HTTP, no model time;
* claude_code: the fake `claude` executable (a Python process per turn), so the
  figure is process start, stream-json parsing, and the diff-and-revert check.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fakes.claude import FakeClaude, success  # noqa: E402
from fakes.conformance import snake_solution  # noqa: E402
from fakes.conformance_model import ConformanceModel  # noqa: E402
from fakes.messages_server import FakeMessagesServer, Reply, tool_use  # noqa: E402

from graphlemon.agents import AgentSettings, build_executor, build_request, run_turn  # noqa: E402
from graphlemon.agents.budget import estimate_tokens  # noqa: E402
from graphlemon.agents.playbook import Playbook  # noqa: E402
from graphlemon.agents.scripted import ScriptedExecutor  # noqa: E402
from graphlemon.devloop.loop import run_devloop  # noqa: E402
from graphlemon.devloop.stages import Stages  # noqa: E402
from graphlemon.models import UsageRecord  # noqa: E402
from graphlemon.project import init_project  # noqa: E402
from graphlemon.stages.planner import run_planner  # noqa: E402
from graphlemon.stages.session import LoopConfig, LoopSession  # noqa: E402
from graphlemon.taskboard import TaskBoard  # noqa: E402

SMOKE = os.environ.get("BENCH_SMOKE") == "1"  # a few seconds: the planner's turn only, few overhead turns
TURNS = int(os.environ.get("BENCH_AGENT_TURNS", "5" if SMOKE else "60"))
CLAUDE_TURNS = int(os.environ.get("BENCH_CLAUDE_TURNS", "2" if SMOKE else "15"))
SNAKE = ROOT / "examples" / "snake"
KEY = "sk-ant-bench-000000000000"
CONTENT = "def test_snake_moves():\n    assert True\n"


def snake_prompts(base: Path) -> None:
    """The per-role prompt table of a snake run through the conformance fake (the planner's turn alone in smoke)."""
    import shutil

    repo = base / "snake"
    shutil.copytree(SNAKE / "repo", repo)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "empty snake package"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env=GIT_ENV)
    project = init_project(repo).project
    task = TaskBoard(project.ledger).create("Implement a snake game")
    model = ConformanceModel(snake_solution(SNAKE))
    with FakeMessagesServer(api_key=KEY) as server:
        server.responder = model
        settings = AgentSettings(api_key=KEY, base_url=server.base_url, retry_max=0)
        session = LoopSession(project, task.task_id, LoopConfig(executor="anthropic", max_unit_attempts=2), settings)
        if SMOKE:
            run_planner(session, 0)
            status = "planner only (BENCH_SMOKE=1)"
        else:
            status = run_devloop(session, Stages(session.run)).status
    usage = project.ledger.read_as("usage", UsageRecord)
    print(f"Prompt size per role: snake goal through the conformance fake, anthropic backend ({status}); "
          f"violations: {len(model.log.violations)}")  # fmt: skip
    head = ("role", "turns", "calls", "static", "docs", "first msg", "uncached in", "cache read", "cache write",
            "largest result")  # fmt: skip
    print(f"{head[0]:13}" + "".join(f"{h:>15}" for h in head[1:]))
    for role, body in model.log.prompts.items():
        static = estimate_tokens(json.dumps(body.get("tools"))) + estimate_tokens(body["system"][0]["text"])
        docs = sum(estimate_tokens(b["text"]) for b in body["system"][1:])
        first = body["messages"][0]["content"]
        first_text = first if isinstance(first, str) else "".join(b.get("text", "") for b in first)
        mine = [u for u in usage if u.role == role]
        cells = (model.log.turns.get(role, 0), len(mine), static, docs, estimate_tokens(first_text),
                 sum(u.input_tokens for u in mine), sum(u.cache_read_tokens for u in mine),
                 sum(u.cache_write_tokens for u in mine), model.log.largest_result.get(role, 0))  # fmt: skip
        print(f"{role:13}" + "".join(f"{c:>15}" for c in cells))
    print()


GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "b",
    "GIT_AUTHOR_EMAIL": "b@b",
    "GIT_COMMITTER_NAME": "b",
    "GIT_COMMITTER_EMAIL": "b@b",
}


def make_project(base: Path):
    repo = base / "repo"
    repo.mkdir()
    env = GIT_ENV
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=repo, check=True)
    (repo / "README.md").write_text("# bench\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "commit", "-qm", "init"], cwd=repo, check=True, env=env)
    return init_project(repo).project


def timed(project, executor, turns: int) -> list[float]:
    times = []
    for i in range(turns):
        request = build_request(project, "tester", context=f"turn {i}", unit_id="snake", run_id=f"r{i}")
        start = time.perf_counter()
        result = run_turn(project, request, executor)
        times.append((time.perf_counter() - start) * 1000)
        assert result.ok, result.output_error
    return times


def scripted_executor() -> ScriptedExecutor:
    return ScriptedExecutor(
        Playbook.from_data(
            {
                "turns": [
                    {
                        "match": {"role": "tester"},
                        "usage": {"input_tokens": 1000, "output_tokens": 200},
                        "actions": [
                            {"write_file": {"path": "tests/test_snake.py", "content": CONTENT}},
                            {"tool": "read_file", "args": {"path": "tests/test_snake.py"}},
                        ],
                        "output": {"ok": True},
                    }
                ]
            }
        )
    )


def fake_model(body: dict) -> Reply:
    last = body["messages"][-1]["content"]
    answered = isinstance(last, list) and last and last[0].get("type") == "tool_result"
    if answered:
        return tool_use("submit_output", {"ok": True})
    return tool_use("write_file", {"path": "tests/test_snake.py", "content": CONTENT})


def row(name: str, times: list[float], base: float | None) -> str:
    median = statistics.median(times)
    ratio = f"{median / base:6.1f}x" if base else "  1.0x"
    return f"{name:12} {len(times):6d} {median:10.2f} {statistics.mean(times):10.2f} {min(times):10.2f} {ratio}"


def main() -> None:
    os.environ.update({k: v for k, v in GIT_ENV.items() if k.startswith("GIT_")})  # the loop commits
    with tempfile.TemporaryDirectory(prefix="bench-agents-") as tmp:
        snake_prompts(Path(tmp))
    with tempfile.TemporaryDirectory(prefix="bench-agents-") as tmp:
        project = make_project(Path(tmp))
        scripted = timed(project, scripted_executor(), TURNS)
        with FakeMessagesServer(api_key=KEY) as server:
            server.responder = fake_model
            settings = AgentSettings(api_key=KEY, base_url=server.base_url, retry_max=0)
            anthropic = timed(project, build_executor("anthropic", settings=settings), TURNS)
            calls = len(server.requests)
        claude = FakeClaude(Path(tmp))
        # its config dir (where it keeps its queue), its server and the egress rule, as a test's environment names them
        os.environ.update({name: value for name, value in claude.env().items() if name != "PATH"})
        claude.queue(
            *[
                success(structured_output={"ok": True}, writes={"tests/test_snake.py": CONTENT})
                for _ in range(CLAUDE_TURNS)
            ]
        )
        claude_code = timed(
            project,
            build_executor(
                "claude_code", settings=AgentSettings(claude_bin=str(claude.bin), claude_egress=[claude.egress])
            ),
            CLAUDE_TURNS,
        )

    base = statistics.median(scripted)
    print("Executor overhead per role turn (write a file, read it, structured output); ms")
    print(f"{'executor':12} {'turns':>6} {'median':>10} {'mean':>10} {'min':>10} {'vs scripted':>7}")
    print(row("scripted", scripted, None))
    print(row("anthropic", anthropic, base) + f"   ({calls // TURNS} API calls per turn, local fake server)")
    print(row("claude_code", claude_code, base) + "   (fake claude process per turn)")


if __name__ == "__main__":
    main()
