"""Executor overhead per role turn, measured side by side in one run (printed, never asserted).

The same turn — write one test file, read it back, submit a structured output —
through each backend, in a fresh git repository:

* scripted: the playbook replays the two tool calls (no model);
* anthropic: the real SDK against the local fake Messages server (two API calls:
  tool use, then submit_output), so the figure is our loop + SDK + HTTP, no model time;
* claude_code: the fake `claude` executable (a Python process per turn), so the
  figure is process start, stream-json parsing, and the diff-and-revert check.
"""

from __future__ import annotations

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
from fakes.messages_server import FakeMessagesServer, Reply, tool_use  # noqa: E402
from smoke import sized  # noqa: E402

from graphlemon.agents import AgentSettings, build_executor, build_request, run_turn  # noqa: E402
from graphlemon.agents.playbook import Playbook  # noqa: E402
from graphlemon.agents.scripted import ScriptedExecutor  # noqa: E402
from graphlemon.project import init_project  # noqa: E402

TURNS = int(os.environ.get("BENCH_AGENT_TURNS", sized(60, 3)))
CLAUDE_TURNS = int(os.environ.get("BENCH_CLAUDE_TURNS", sized(15, 2)))
KEY = "sk-ant-bench-000000000000"
CONTENT = "def test_snake_moves():\n    assert True\n"


def make_project(base: Path):
    repo = base / "repo"
    repo.mkdir()
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@b",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@b",
    }
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
    with tempfile.TemporaryDirectory(prefix="bench-agents-") as tmp:
        project = make_project(Path(tmp))
        scripted = timed(project, scripted_executor(), TURNS)
        with FakeMessagesServer(api_key=KEY) as server:
            server.responder = fake_model
            settings = AgentSettings(api_key=KEY, base_url=server.base_url, retry_max=0)
            anthropic = timed(project, build_executor("anthropic", settings=settings), TURNS)
            calls = len(server.requests)
        claude = FakeClaude(Path(tmp))
        claude.queue(
            *[
                success(structured_output={"ok": True}, writes={"tests/test_snake.py": CONTENT})
                for _ in range(CLAUDE_TURNS)
            ]
        )
        claude_code = timed(
            project, build_executor("claude_code", settings=AgentSettings(claude_bin=str(claude.bin))), CLAUDE_TURNS
        )

    base = statistics.median(scripted)
    print("Executor overhead per role turn (write a file, read it, structured output); ms")
    print(f"{'executor':12} {'turns':>6} {'median':>10} {'mean':>10} {'min':>10} {'vs scripted':>7}")
    print(row("scripted", scripted, None))
    print(row("anthropic", anthropic, base) + f"   ({calls // TURNS} API calls per turn, local fake server)")
    print(row("claude_code", claude_code, base) + "   (fake claude process per turn)")


if __name__ == "__main__":
    main()
