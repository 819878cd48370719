"""The calc playbook spoken by fake models: FakeClaude behaviours and a FakeMessagesServer responder.

The scripted calc playbook (fixtures/calc/playbook.yaml) says what each role does
(files to write, todo list, structured output). Here the same turns are replayed
through the real LLM backends' code paths: as Claude Code stream-json from the fake
`claude` executable (writes happen in the call's cwd, the unit's worktree), and as
Messages API tool calls (`write_file`, `write_todolist`, `submit_output`) from the
fake Messages server. Both pick the turn by what the request says (the role's
skill, the unit), so units running in parallel threads get their own turns.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from fakes.claude import success, when
from fakes.messages_server import Reply, error, tool_uses

CALC = Path(__file__).resolve().parent / "fixtures" / "calc"
ROLE_TITLES = {
    "planner": "Planner",
    "coder": "Coder",
    "tester": "Tester",
    "integrator": "Integrator",
    "bug-triager": "BugTriager",
    "validator": "Validator",
}


@dataclass
class ScriptTurn:
    role: str
    unit: str | None
    writes: dict[str, str] = field(default_factory=dict)  # path (relative to the turn's workdir) -> content
    todo: list[str] = field(default_factory=list)  # titles of a todo list the turn completes
    output: dict[str, Any] = field(default_factory=dict)

    def skill_marks(self) -> list[str]:
        """Substrings of the rendered prompt (the skill, then the turn's first message) that identify this turn."""
        marks = [f"You are the {ROLE_TITLES[self.role]} agent"]
        return marks + ([f"unit `{self.unit}`"] if self.unit else [])


def calc_turns(base: Path = CALC) -> list[ScriptTurn]:
    """The turns of the calc playbook, with `from_file` contents read."""
    data = yaml.safe_load((base / "playbook.yaml").read_text())
    turns = []
    for t in data["turns"]:
        turn = ScriptTurn(role=t["match"]["role"], unit=t["match"].get("unit"), output=t.get("output") or {})
        for action in t.get("actions", []):
            if "write_file" in action:
                spec = action["write_file"]
                turn.writes[spec["path"]] = spec.get("content") or (base / spec["from_file"]).read_text()
            elif action.get("tool") == "write_todolist":
                turn.todo += [item["title"] for item in action["args"]["items"]]
        turns.append(turn)
    return turns


def script_turn(role: str, unit: str | None = None) -> ScriptTurn:
    return next(t for t in calc_turns() if t.role == role and t.unit == unit)


# -- Claude Code -------------------------------------------------------------------------------


def claude_behaviour(turn: ScriptTurn, **extra: Any) -> dict[str, Any]:
    """A FakeClaude behaviour that does `turn` (writes, TodoWrite, structured output), only for its role/unit."""
    todos = [{"content": t, "status": "completed", "activeForm": t} for t in turn.todo] or None
    behaviour = success(structured_output=turn.output, writes=turn.writes, todos=todos, result="done", **extra)
    return when(behaviour, prompt=turn.skill_marks())


def claude_calc(roles: tuple[str, ...] = ("planner", "coder", "tester")) -> list[dict[str, Any]]:
    """Behaviours for a green calc run (planner, both coders, both testers)."""
    return [claude_behaviour(t) for t in calc_turns() if t.role in roles]


# -- Messages API ------------------------------------------------------------------------------


class CalcModel:
    """A `FakeMessagesServer.responder`: step k of a role's turn is chosen by the assistant messages so far.

    Step 0 calls the write tools (all files and the todo list in one message), step 1
    submits the structured output. A request no turn fits gets a 500 naming it.
    """

    def __init__(self, turns: list[ScriptTurn] | None = None) -> None:
        self.turns = turns or calc_turns()
        self.seen: list[tuple[str, str | None, int]] = []  # (role, unit, step) per answered request

    def find(self, system: str) -> ScriptTurn | None:
        system = " ".join(system.split())  # skills wrap their lines
        matching = [t for t in self.turns if all(m in system for m in t.skill_marks())]
        return max(matching, key=lambda t: len(t.skill_marks()), default=None)

    def __call__(self, body: dict[str, Any]) -> Reply:
        system = " ".join(b.get("text", "") for b in body.get("system") or [] if isinstance(b, dict))
        turn = self.find(system + " " + _text(body["messages"][0]["content"]))
        if turn is None:
            return error(500, "api_error", f"CalcModel: no scripted turn for this system prompt: {system[:120]!r}")
        step = sum(1 for m in body["messages"] if m["role"] == "assistant")
        self.seen.append((turn.role, turn.unit, step))
        calls: list[tuple[str, dict[str, Any]]] = []
        if step == 0:
            calls += [("write_file", {"path": p, "content": c}) for p, c in turn.writes.items()]
            if turn.todo:
                calls.append(("write_todolist", {"items": [{"title": t, "status": "done"} for t in turn.todo]}))
        if not calls:
            calls = [("submit_output", json.loads(json.dumps(turn.output)))]
        return tool_uses(calls)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return " ".join(b.get("text", "") for b in content if isinstance(b, dict))


def role_of(system: Any) -> str | None:
    """The role whose skill is this request's system prompt."""
    text = " ".join(b.get("text", "") for b in system or [] if isinstance(b, dict))
    return next((role for role, title in ROLE_TITLES.items() if f"You are the {title} agent" in text), None)
