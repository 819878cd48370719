"""Misbehaviour in a model's turn, noticed and named: a refusal, replies without a tool call, the same call again.

Each is answered once with what to do differently, then counted, and a limit ends the attempt with a stop
reason that names it (`refused`, `no_tool_use`, `repeated_calls`), so the stage can start the next attempt
and the person reads what happened:

* a reply the API stops with `stop_reason: refusal` ends the attempt as `refused` at once;
* a reply with no tool call that is not a valid answer is told, once, to go on with the tools; it is told in
  the same note that a reply saying it will not do the work ends the attempt as a refusal, and that
  `NO_TOOL_REPLIES` such replies in a row end it. The next reply without a tool call ends the attempt: as
  `refused` when its first sentence says the model cannot or will not ("I can't", "I won't", "I'm unable",
  "I must decline"), its words quoted; else as `no_tool_use`;
* a tool call identical to an earlier one (same tool, same arguments) with no change to the work tree in
  between would give the same result: it is not run. The first such repeat is answered with what to do
  differently (and the earlier error, when it failed); after `MAX_REPEATS` repeats the attempt ends as
  `repeated_calls`. A call "changes the work tree" when it is a writing tool's successful call; clearing
  old results from the context also starts afresh (the model may need to read again).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

NO_TOOL_REPLIES = 2
MAX_REPEATS = 3
CHANGING_TOOLS = frozenset({"write_file", "edit_file", "apply_patch", "bug_open", "bug_transition", "write_todolist",
                            "update_todo_item", "timeline_append", "record_memory"})  # fmt: skip
_REFUSAL = re.compile(
    r"\bI\s*(?:can[’']?t|cannot|can not|won[’']?t|will not|(?:am|[’']m)\s+(?:not able|unable)|must decline|decline)\b",
    re.I,
)


def reads_as_refusal(text: str) -> bool:
    """The reply's first sentence says the model cannot or will not do it ("I can't help with that.")."""
    first = re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0][:300]
    return bool(_REFUSAL.search(first))


def first_words(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@dataclass
class Ending:
    """The attempt ends: `stop_reason` and the sentence a person reads."""

    stop_reason: str
    why: str


@dataclass
class TextReplies:
    """Replies without a tool call, in a row."""

    in_a_row: int = 0
    told: bool = False  # the model has read the full note once

    def tool_called(self) -> None:
        self.in_a_row = 0

    def after(self, text: str) -> Ending | None:
        """Count one reply without a tool call (not a valid answer) -> the ending, or None: answer it with `note`."""
        self.in_a_row += 1
        if self.in_a_row == 1:
            return None
        if reads_as_refusal(text):
            return Ending("refused", f"the model declined in text: {first_words(text)!r}")
        if self.in_a_row >= NO_TOOL_REPLIES:
            quoted = f"; its last reply: {first_words(text, 200)!r}" if text.strip() else "; its last reply was empty"
            return Ending("no_tool_use", f"{self.in_a_row} replies in a row without a tool call{quoted}")
        return None

    def note(self, problem: str, submit_tool: str) -> str:
        if self.told:
            return f"[Reply {self.in_a_row} of {NO_TOOL_REPLIES} in a row without a tool call: {problem}.]"
        self.told = True
        return (
            f"Your reply called no tool and is not a valid final answer ({problem}). Nobody reads text in this "
            f"unattended run: continue the work with the tools, and when it is done call {submit_tool}. If you will "
            f"not do this work, say so in one sentence: the attempt then ends as a refusal and a person reads it. "
            f"{NO_TOOL_REPLIES} replies in a row without a tool call end the attempt (this was the first)."
        )


@dataclass
class _Seen:
    epoch: int
    ok: bool
    text: str


@dataclass
class RepeatedCalls:
    """Calls identical to an earlier one with nothing changed in between."""

    epoch: int = 0
    repeats: int = 0
    seen: dict[str, _Seen] = field(default_factory=dict)

    def check(self, name: str, args: Any) -> tuple[str, bool] | None:
        """None: run the call. Else (the answer to give instead, is it an error)."""
        earlier = self.seen.get(_key(name, args))
        if earlier is None or earlier.epoch != self.epoch:
            return None
        self.repeats += 1
        if self.repeats > 1:
            return (f"Not run: this exact call was made before and nothing changed since (repeat {self.repeats} of "
                    f"{MAX_REPEATS}; then this attempt ends).", True)  # fmt: skip
        if earlier.ok:
            why = "Its result is above, unchanged since: use it, or ask for something else (another file, range "
            why += "or search)."
        else:
            why = (f"It failed with: {first_words(earlier.text, 400)} The same arguments fail the same way: change "
                   "them (for an edit, read the file first and copy the text to replace exactly).")  # fmt: skip
        return (f"Not run: this exact call was made before and nothing in the work tree changed since. {why} "
                f"After {MAX_REPEATS} repeated calls this attempt ends.", True)  # fmt: skip

    def record(self, name: str, args: Any, *, ok: bool, text: str) -> None:
        if ok and name in CHANGING_TOOLS:
            self.epoch += 1  # its effect is the new state: the same call again changes nothing
        self.seen[_key(name, args)] = _Seen(self.epoch, ok, text)

    def context_trimmed(self) -> None:
        self.epoch += 1

    def ending(self) -> Ending | None:
        if self.repeats >= MAX_REPEATS:
            return Ending("repeated_calls", f"{self.repeats} calls repeated an earlier identical call with nothing "
                          "changed in between")  # fmt: skip
        return None


def _key(name: str, args: Any) -> str:
    return json.dumps([name, args], sort_keys=True, ensure_ascii=False, default=str)
