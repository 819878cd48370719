"""Context discipline for a model's conversation: a budget over every block, stubs by one rule, a turn countdown.

Everything in the conversation counts, not only tool results: the model's own text, the inputs of its tool
calls (a whole file in a `write_file`), its thinking, and every block `BLOCK_OVERHEAD_CHARS` (40) beyond its
characters (a reply of 10,000 one-character blocks is 400,000, not 10,000; agents/reply_blocks.py joins
adjacent text blocks before they are kept). The rule (told to the model once, `CONTEXT_RULE`):

* a tool result is at most `RESULT_MAX_CHARS` when it is added (head and tail kept, with a note on how to
  ask for less);
* a text block or a string in a tool call's input over `REPLY_MAX_CHARS` becomes a one-line stub once it
  has been answered (the reply that holds it is never sent longer than that again);
* once the tool results pass `CLEAR_AFTER_CHARS`, or the whole conversation after its first message passes
  `CONTEXT_MAX_CHARS`, every tool result but the latest `KEEP_RECENT_RESULTS`, and every text and tool
  input over `STUB_CHARS` in the replies before the latest `KEEP_RECENT_REPLIES`, become stubs, in one batch
  (the cached prefix changes once per batch). The first message (the turn's brief) is never touched.

Thinking blocks are never changed: the API checks their signatures. A reply's thinking goes back whole for
as long as its tool-use cycle runs; once a plain user message (not tool results) follows it, the cycle is
closed and a batch drops that reply's thinking blocks whole, which the API allows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

RESULT_MAX_CHARS = 16_000
RESULT_TAIL_CHARS = 3_000
REPLY_MAX_CHARS = 16_000
CLEAR_AFTER_CHARS = 120_000
CONTEXT_MAX_CHARS = 240_000
KEEP_RECENT_RESULTS = 6
KEEP_RECENT_REPLIES = 3
STUB_CHARS = 300  # a block this short is never worth a stub
BLOCK_OVERHEAD_CHARS = 40  # what every block counts beyond its characters: its JSON framing (~30 bytes) and more
COUNTDOWN_FROM = 5
CLEARED = "[an earlier tool result, cleared to keep the context small; call the tool again if you need it]"
THINKING = ("thinking", "redacted_thinking")
CONTEXT_RULE = (
    f"Context: a tool result keeps {RESULT_MAX_CHARS:,} characters (head and tail); your text or a tool input over "
    f"{REPLY_MAX_CHARS:,} characters becomes a one-line stub once answered. Past {CONTEXT_MAX_CHARS:,} characters, "
    f"all but the first message, the latest {KEEP_RECENT_RESULTS} tool results and your latest "
    f"{KEEP_RECENT_REPLIES} replies become stubs: keep what you need in files."
)


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


@dataclass
class Trimmed:
    """What one batch replaced: tool results, reply texts and tool inputs, thinking blocks dropped."""

    tool_results: int = 0
    replies: int = 0
    thinking: int = 0

    def __bool__(self) -> bool:
        return bool(self.tool_results or self.replies or self.thinking)


class Conversation:
    """The messages of one turn, kept within the context budget by the rule above."""

    def __init__(self, first_message: str) -> None:
        self.messages: list[dict[str, Any]] = [{"role": "user", "content": first_message}]
        self.force_clear = False

    def add(self, role: str, content: Any) -> None:
        """Add a message; an assistant's content is kept as the API sent it (thinking and signatures included)."""
        self.messages.append({"role": role, "content": content})

    def size(self) -> int:
        """Characters of every block after the first message."""
        return sum(_size(b) for m in self.messages[1:] for b in _blocks(m))

    def _results(self) -> list[dict[str, Any]]:
        return [b for m in self.messages if m["role"] == "user" for b in _blocks(m) if b.get("type") == "tool_result"]

    def can_clear(self) -> bool:
        return any(_chars(b) > STUB_CHARS for m in self.messages[1:] for b in _blocks(m) if b.get("type") not in THINKING)

    def prepare(self, keep_results: int = KEEP_RECENT_RESULTS, keep_replies: int = KEEP_RECENT_REPLIES) -> Trimmed:
        """Before a call: stub the answered replies' oversized blocks; over a budget (or after a 'prompt is too
        long'), trim in one batch. -> what was replaced."""
        done = Trimmed(replies=self._cap_answered())
        results = self._results()
        over = sum(_size(b) for b in results) > CLEAR_AFTER_CHARS or self.size() > CONTEXT_MAX_CHARS
        if not (over or self.force_clear):
            return done
        self.force_clear = False
        for block in results[: max(0, len(results) - keep_results)]:
            if _chars(block) > STUB_CHARS:
                block["content"] = CLEARED
                done.tool_results += 1
        replies = [i for i, m in enumerate(self.messages) if m["role"] == "assistant"]
        closed = self._closed_before()
        for index in replies[: max(0, len(replies) - keep_replies)]:
            done.replies += _stub_blocks(self.messages[index]["content"], STUB_CHARS)
            if index < closed:
                done.thinking += _drop_thinking(self.messages[index])
        return done

    def clear_old(self, keep: int = KEEP_RECENT_RESULTS) -> int:
        """`prepare` with `keep` tool results kept -> how many blocks were replaced (results and replies)."""
        done = self.prepare(keep_results=keep)
        return done.tool_results + done.replies

    def _cap_answered(self) -> int:
        """Stub text blocks and tool-input strings over REPLY_MAX_CHARS in every reply, except the latest one when it
        holds thinking and its tool-use cycle is still open (the API wants that message back as it came)."""
        count = 0
        replies = [i for i, m in enumerate(self.messages) if m["role"] == "assistant" and isinstance(m["content"], list)]
        for index in replies:
            content = self.messages[index]["content"]
            if index == replies[-1] and index >= self._closed_before() and any(b.get("type") in THINKING for b in content):
                continue  # the open cycle's latest reply with thinking goes back as it came
            count += _stub_blocks(content, REPLY_MAX_CHARS)
        return count

    def _closed_before(self) -> int:
        """Index of the latest plain user message (no tool results) after the first: replies before it belong to a
        closed tool-use cycle."""
        for index in range(len(self.messages) - 1, 0, -1):
            message = self.messages[index]
            if message["role"] == "user" and not any(b.get("type") == "tool_result" for b in _blocks(message)):
                return index
        return 0


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message["content"]
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def _stub_blocks(content: Any, limit: int) -> int:
    """Replace text blocks and tool-input strings longer than `limit` by stubs -> how many were replaced."""
    count = 0
    for block in content if isinstance(content, list) else []:
        if block.get("type") == "text" and len(block.get("text", "")) > limit:
            block["text"] = f"[your earlier text of {len(block['text']):,} characters, left out to keep the context small]"
            count += 1
        elif block.get("type") == "tool_use" and isinstance(block.get("input"), dict):
            count += _stub_strings(block["input"], limit)
    return count


def _stub_strings(value: Any, limit: int) -> int:
    count = 0
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in list(items):
        if isinstance(item, str) and len(item) > limit:
            value[key] = f"[{len(item):,} characters, left out to keep the context small]"
            count += 1
        elif isinstance(item, dict | list):
            count += _stub_strings(item, limit)
    return count


def _drop_thinking(message: dict[str, Any]) -> int:
    content = message["content"]
    if not isinstance(content, list):
        return 0
    kept = [b for b in content if b.get("type") not in THINKING]
    dropped = len(content) - len(kept)
    if dropped:
        message["content"] = kept or [{"type": "text", "text": "(thinking left out)"}]
    return dropped


def _size(block: dict[str, Any]) -> int:
    """Characters of one block plus BLOCK_OVERHEAD_CHARS (a block costs tokens of its own)."""
    return BLOCK_OVERHEAD_CHARS + _chars(block)


def _chars(block: dict[str, Any]) -> int:
    kind = block.get("type")
    if kind == "text":
        return len(block.get("text", ""))
    if kind == "thinking":
        return len(block.get("thinking", "")) + len(block.get("signature", ""))
    if kind == "redacted_thinking":
        return len(block.get("data", ""))
    if kind == "tool_use":
        return _input_size(block.get("input"))
    content = block.get("content")
    if isinstance(content, str):
        return len(content)
    return sum(len(str(part.get("text", ""))) for part in content or [] if isinstance(part, dict))


def _input_size(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(len(str(k)) + _input_size(v) for k, v in value.items())
    if isinstance(value, list):
        return sum(_input_size(v) for v in value)
    return len(str(value))
