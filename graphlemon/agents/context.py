"""Context discipline for a model's conversation: capped tool results, old results cleared, a turn countdown.

* every tool result a model sees is at most `RESULT_MAX_CHARS` (head and tail kept,
  with a note on how to ask for less);
* once the tool results in the conversation pass `CLEAR_AFTER_CHARS`, all but the
  `KEEP_RECENT_RESULTS` latest are replaced by a one-line stub (the model can call
  the tool again). Clearing happens in one batch, so the cached prefix stays stable
  between batches;
* near the end of a turn's model calls each tool result says how many are left.
"""

from __future__ import annotations

from typing import Any

RESULT_MAX_CHARS = 16_000
RESULT_TAIL_CHARS = 3_000
CLEAR_AFTER_CHARS = 120_000
KEEP_RECENT_RESULTS = 6
STUB_CHARS = 300  # a result this short is never worth clearing
COUNTDOWN_FROM = 5
CLEARED = "[an earlier tool result, cleared to keep the context small; call the tool again if you need it]"


def cap_result(text: str, limit: int = RESULT_MAX_CHARS) -> str:
    """`text`, or its head and tail with a note saying how much was left out and how to narrow the call."""
    if len(text) <= limit:
        return text
    tail = min(RESULT_TAIL_CHARS, limit // 4)
    head = limit - tail
    cut = len(text) - head - tail
    return (
        f"{text[:head]}\n\n[… {cut} characters of {len(text)} left out. Narrow the call: read a range of lines "
        f"(offset / limit), search a smaller folder or a more specific string, or list one folder …]\n\n"
        f"{text[-tail:]}"
    )


def countdown(left: int) -> str:
    """The note appended to a model's tool results when few model calls are left ('' before that)."""
    if left > COUNTDOWN_FROM:
        return ""
    if left <= 1:
        return "\n\n[This is your last model call in this turn: submit your final answer now.]"
    return f"\n\n[{left} model calls left in this turn: finish the work and submit your final answer.]"


class Conversation:
    """The messages of one turn, with old tool results cleared when they grow too large."""

    def __init__(self, first_message: str) -> None:
        self.messages: list[dict[str, Any]] = [{"role": "user", "content": first_message}]
        self.force_clear = False

    def add(self, role: str, content: Any) -> None:
        self.messages.append({"role": role, "content": content})

    def _results(self) -> list[dict[str, Any]]:
        return [
            block
            for message in self.messages
            if message["role"] == "user" and isinstance(message["content"], list)
            for block in message["content"]
            if block.get("type") == "tool_result"
        ]

    def can_clear(self) -> bool:
        return any(_size(b) > STUB_CHARS for b in self._results())

    def clear_old(self, keep: int = KEEP_RECENT_RESULTS) -> int:
        """Replace all but the `keep` latest tool results by a stub when the results are over the threshold (or
        when `force_clear` was set after a 'prompt is too long' answer); -> how many were cleared."""
        results = self._results()
        total = sum(_size(b) for b in results)
        if total <= CLEAR_AFTER_CHARS and not self.force_clear:
            return 0
        self.force_clear = False
        cleared = 0
        for block in results[: max(0, len(results) - keep)]:
            if _size(block) > STUB_CHARS:
                block["content"] = CLEARED
                cleared += 1
        return cleared


def _size(block: dict[str, Any]) -> int:
    content = block.get("content")
    if isinstance(content, str):
        return len(content)
    return sum(len(str(part.get("text", ""))) for part in content or [] if isinstance(part, dict))
