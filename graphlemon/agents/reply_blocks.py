"""A reply's blocks as they go back to the Messages API: what came, minus what the API itself refuses.

Thinking and redacted_thinking blocks are never touched (the API checks their signatures). The rest is made
acceptable by these rules, each counted in `Normalised.fixes` (the transcript's `reply_normalised` event):

* a text block that is empty or only whitespace is dropped (the API refuses it);
* adjacent text blocks without citations are joined into one (10,000 one-character blocks cost 10,000 blocks'
  overhead in tokens; joined they cost their characters);
* a tool_use without a usable id (missing, not a string, not `[A-Za-z0-9_-]+`), with an id an earlier block of
  the conversation already used, without a name, or with an input that is not an object gets an id GraphLemon
  assigns (`toolu_gl_<n>`), a name and an object input, and is *not run*: `Call.problem` says what was wrong,
  and the model reads it as that call's error result.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

ID_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,128}")
NAME_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,128}")
THINKING = ("thinking", "redacted_thinking")


@dataclass(frozen=True)
class Call:
    """One tool call of a reply, as it goes back; `problem` set: the call is answered with it and not run."""

    id: str
    name: str
    input: Any
    problem: str | None = None


@dataclass
class Normalised:
    content: list[dict[str, Any]]
    calls: list[Call]
    fixes: dict[str, int] = field(default_factory=dict)


class ToolUseIds:
    """The tool_use ids a conversation has used so far, and the ones GraphLemon hands out."""

    def __init__(self) -> None:
        self.seen: set[str] = set()
        self.assigned = 0

    def fresh(self) -> str:
        while True:
            self.assigned += 1
            candidate = f"toolu_gl_{self.assigned}"
            if candidate not in self.seen:
                return candidate


def normalise(content: list[dict[str, Any]], ids: ToolUseIds) -> Normalised:
    """The reply's blocks (as `model_dump`ed) made acceptable to the API by the rules above."""
    out: list[dict[str, Any]] = []
    calls: list[Call] = []
    fixes: dict[str, int] = {}
    for block in content:
        kind = block.get("type")
        if kind == "text":
            _add_text(out, block, fixes)
        elif kind == "tool_use":
            fixed, call = _tool_use(block, ids, fixes)
            out.append(fixed)
            calls.append(call)
        else:
            out.append(block)  # thinking, redacted_thinking, anything else: as it came
    return Normalised(out, calls, fixes)


def _add_text(out: list[dict[str, Any]], block: dict[str, Any], fixes: dict[str, int]) -> None:
    text = block.get("text")
    if not isinstance(text, str) or not text.strip():
        fixes["empty_text_dropped"] = fixes.get("empty_text_dropped", 0) + 1
        return
    last = out[-1] if out else None
    if last is not None and _plain_text(last) and _plain_text(block):
        out[-1] = {**last, "text": last["text"] + text}
        fixes["text_blocks_joined"] = fixes.get("text_blocks_joined", 0) + 1
        return
    out.append(block)


def _plain_text(block: dict[str, Any]) -> bool:
    return block.get("type") == "text" and not block.get("citations") and set(block) <= {"type", "text"}


def _tool_use(block: dict[str, Any], ids: ToolUseIds, fixes: dict[str, int]) -> tuple[dict[str, Any], Call]:
    raw_id, name, args = block.get("id"), block.get("name"), block.get("input")
    problems = []
    if not isinstance(raw_id, str) or not raw_id:
        problems.append("it had no id")
    elif not ID_PATTERN.fullmatch(raw_id):
        problems.append(f"its id {raw_id[:80]!r} is not letters, digits, '_' and '-'")
    elif raw_id in ids.seen:
        problems.append(f"its id {raw_id!r} was already used by another call")
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        problems.append("it had no valid tool name")
        name = "invalid_call"
    if not isinstance(args, dict):
        problems.append("its input was not a JSON object")
        args = {}
    if not problems:
        ids.seen.add(raw_id)
        return block, Call(raw_id, name, args)
    new_id = ids.fresh()
    ids.seen.add(new_id)
    fixes["tool_use_fixed"] = fixes.get("tool_use_fixed", 0) + 1
    problem = (
        f"error[INVALID_PARAM]: this tool call was not run: {' and '.join(problems)}; GraphLemon gave it the id "
        f"{new_id!r}. Call the tool again; every call needs a tool name, a new id and an object input."
    )
    fixed = {**block, "id": new_id, "name": name, "input": args}
    return fixed, Call(new_id, name, args, problem)
