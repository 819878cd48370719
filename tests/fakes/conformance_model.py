"""`ConformanceModel`: the conformance fake (conformance.py) as a `FakeMessagesServer.responder`, and
`ConformanceClaude`: the same fake as behaviours of the fake `claude`.

The Messages side keeps no state of its own: each request carries the whole conversation, so the
step is the number of assistant messages so far. Before answering it checks what the harness said
to the last step (a tool error is a violation). The tools it may call are the ones the request declares.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from .conformance import READ_TOOLS, WRITE_TOOLS, ConformanceLog, plan
from .messages_server import Reply, text, tool_uses


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")


class ConformanceModel:
    def __init__(self, solution: dict[str, str], log: ConformanceLog | None = None) -> None:
        self.solution = solution
        self.log = log or ConformanceLog()
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        system = "\n\n".join(b.get("text", "") for b in body.get("system") or [])
        messages = body["messages"]
        todo, problems = plan(system, _text(messages[0]["content"]), self.solution, "anthropic", body.get("tools") or [])
        role = todo.facts.role
        step = sum(1 for m in messages if m["role"] == "assistant")
        if step:
            problems += self._check_results(role, messages[-1]["content"])
        with self._lock:
            if step == 0:
                self.log.turns[role] = self.log.turns.get(role, 0) + 1
                self.log.prompts.setdefault(role, body)
            self.log.violations += [p for p in problems if p not in self.log.violations]
        steps = [
            [(READ_TOOLS["anthropic"], {"path": p}) for p in todo.reads],
            [(WRITE_TOOLS["anthropic"], {"path": p, "content": c}) for p, c in todo.writes.items()],
            [("run_tests", {"targets": todo.run_tests})] if todo.run_tests else [],
            [("submit_output", todo.answer)],
        ]
        steps = [s for s in steps if s]
        if step >= len(steps):  # the answer was refused: say so in text, which the harness must handle
            return text("I cannot produce an answer the harness accepts.")
        return tool_uses(steps[step])

    def _check_results(self, role: str, content: Any) -> list[str]:
        out = []
        for block in content if isinstance(content, list) else []:
            if block.get("type") != "tool_result":
                continue
            result = block.get("content")
            result = result if isinstance(result, str) else _text(result)
            with self._lock:
                self.log.note_result(role, result)
            if block.get("is_error"):
                out.append(f"{role}: the harness refused a step the prompt asked for: {result[:400]}")
        return out


class ConformanceClaude:
    """Behaviours for `FakeClaude.queue`: each turn does what its prompt says (fake_claude.py `conformance`)."""

    def __init__(self, folder: Path, solution: dict[str, str]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.solution_file = folder / "solution.json"
        self.solution_file.write_text(json.dumps(solution))
        self.log_file = folder / "conformance.ndjson"
        self.log_file.touch()

    def behaviours(self, count: int) -> list[dict[str, Any]]:
        return [{"conformance": {"solution": str(self.solution_file), "log": str(self.log_file)}}] * count

    def entries(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.log_file.read_text().splitlines() if line.strip()]

    @property
    def violations(self) -> list[str]:
        return [e["violation"] for e in self.entries() if "violation" in e]

    def roles(self) -> list[str]:
        return [e["role"] for e in self.entries() if "role" in e]
