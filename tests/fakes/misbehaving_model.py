"""A model that behaves like another responder except for one injected misbehaviour (issue 48).

`MisbehavingModel(inner, misbehaviour, role=..., unit=..., attempts=...)` is a `FakeMessagesServer.responder`:
requests of the turns it matches (by the first message's `# THIS TURN` line: role, unit, attempt) get the
misbehaviour's reply; every other request, and every step the misbehaviour passes on (it returns None), gets
`inner`'s. The misbehaviours are the shapes a model or a proxy produces in the wild:

* what answers instead of a message: `html_page`, `empty_body`, `cut_json`, `plain_text`, `not_a_message`;
* text that cannot be trimmed: `huge_preamble(chars)` (a reply's text beside its tool calls);
* `thinking_with(secret)`: a signed thinking block (holding a key-shaped string) before inner's reply;
* `api_refusal` (stop_reason refusal) and `text_refusal` (a plain "I can't help with that");
* `same_call(name, args)`, `failing_edit(path)`: the identical call at every step;
* `text_only`: a reply without a tool call at every step;
* `cut_call(stop_reason)`: a half-written `write_file` in a reply cut with that stop reason, once;
* `unknown_tool(name)`: a call of a tool the turn does not have, once.

`times` caps how many replies the misbehaviour gives (None: every matched step it answers). `seen` counts the
requests each matched turn got (`(role, unit, attempt) -> n`), `injected` the misbehaving replies.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from typing import Any

from .messages_server import Reply, raw, text, thinking, tool_use, tool_uses

Misbehaviour = Callable[[dict[str, Any], int], Reply | None]  # (request body, step in the turn) -> reply | None
_TURN = re.compile(r"^role ([\w-]+)(?:, unit `([^`]+)`)?.*?attempt (\d+)", re.M)


def turn_of(body: dict[str, Any]) -> tuple[str, str | None, int]:
    """(role, unit, attempt) from the first message's THIS TURN line."""
    first = body["messages"][0]["content"]
    first = first if isinstance(first, str) else " ".join(b.get("text", "") for b in first if isinstance(b, dict))
    m = _TURN.search(first)
    return (m[1], m[2], int(m[3])) if m else ("?", None, 0)


class MisbehavingModel:
    def __init__(
        self,
        inner: Callable[[dict[str, Any]], Reply],
        misbehaviour: Misbehaviour,
        *,
        role: str,
        unit: str | None = None,
        attempts: tuple[int, ...] | None = (1,),
        times: int | None = None,
    ) -> None:
        self.inner, self.misbehaviour = inner, misbehaviour
        self.role, self.unit, self.attempts, self.times = role, unit, attempts, times
        self.injected = 0  # replies the misbehaviour gave
        self.seen: dict[tuple[str, str | None, int], int] = {}
        self._took: dict[tuple[str, str | None, int], set[int]] = {}  # the steps the misbehaviour answered
        self._lock = threading.Lock()

    def __call__(self, body: dict[str, Any]) -> Reply:
        key = turn_of(body)
        role, unit, attempt = key
        matched = role == self.role and (self.unit is None or unit == self.unit) and (
            self.attempts is None or attempt in self.attempts
        )
        step = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if matched:
            with self._lock:
                self.seen[key] = self.seen.get(key, 0) + 1
            spent = self.times is not None and self.injected >= self.times
            reply = None if spent else self.misbehaviour(body, step)
            if reply is not None:
                with self._lock:
                    self.injected += 1
                    if reply.raw is None and reply.status < 400:  # a message: the turn moved on a step
                        self._took.setdefault(key, set()).add(step)
                return reply
        return self.inner(_without(body, self._took.get(key, set()) if matched else set()))


def _without(body: dict[str, Any], steps: set[int]) -> dict[str, Any]:
    """The body as if the misbehaving steps (each an assistant message and the answer to it) never happened, so
    the inner responder picks up its own script where it left off."""
    if not steps:
        return body
    messages = body["messages"]
    drop = {i for s in steps for i in (1 + 2 * s, 2 + 2 * s)}
    return {**body, "messages": [m for i, m in enumerate(messages) if i not in drop]}


def always(reply: Callable[[], Reply]) -> Misbehaviour:
    return lambda body, step: reply()


def first_step(reply: Callable[[], Reply]) -> Misbehaviour:
    return lambda body, step: reply() if step == 0 else None


# -- what answers instead of a message ------------------------------------------------------------------

HTML = b"<!DOCTYPE html><html><head><title>Hotel WiFi</title></head><body>Please sign in to continue.</body></html>"


def html_page() -> Reply:
    return raw(HTML, "text/html; charset=utf-8")


def empty_body() -> Reply:
    return raw(b"", "application/json")


def cut_json() -> Reply:
    return raw(b'{"id":"msg_01","type":"message","role":"assistant","content":[{"type":"te', "application/json")


def plain_text() -> Reply:
    return raw(b"upstream connect error or disconnect/reset before headers", "text/plain")


def not_a_message() -> Reply:
    return raw(b'{"status": "ok", "data": []}', "application/json")


# -- replies ----------------------------------------------------------------------------------------------


def huge_preamble(inner: Callable[[dict[str, Any]], Reply], chars: int) -> Misbehaviour:
    """Inner's reply with `chars` characters of text before its blocks (the model thinking aloud)."""

    def reply(body: dict[str, Any], step: int) -> Reply:
        answer = inner(body)
        return Reply(content=[{"type": "text", "text": "Let me think. " + "x" * chars}, *answer.content],
                     stop_reason=answer.stop_reason)  # fmt: skip

    return reply


def thinking_with(inner: Callable[[dict[str, Any]], Reply], secret: str) -> Misbehaviour:
    """Inner's reply after a signed thinking block that quotes `secret` (a key-shaped string)."""

    def reply(body: dict[str, Any], step: int) -> Reply:
        answer = inner(body)
        block = thinking(f"The config mentions {secret}; I will not use it. Next: do the work.")
        return Reply(content=[block, *answer.content], stop_reason=answer.stop_reason)

    return reply


def api_refusal() -> Reply:
    return Reply(content=[{"type": "text", "text": "I"}], stop_reason="refusal")


def text_refusal() -> Reply:
    return text("I can't help with that request.")


def text_only() -> Reply:
    return text("Here is how I would implement it: first the function, then its checks. Let me describe it.")


def same_call(name: str, args: dict[str, Any]) -> Misbehaviour:
    return lambda body, step: tool_use(name, dict(args))


def failing_edit(path: str) -> Misbehaviour:
    return lambda body, step: tool_use("edit_file", {"path": path, "old": "text that is not there", "new": "x"})


def cut_call(path: str, stop_reason: str) -> Misbehaviour:
    """A first reply whose `write_file` was cut half-way, stopped with `stop_reason`; inner's replies after it."""

    def reply(body: dict[str, Any], step: int) -> Reply | None:
        if step:
            return None
        cut = tool_uses([("write_file", {"path": path, "content": "def add(a, b):\n    return a +"})])
        cut.stop_reason = stop_reason
        return cut

    return reply


def unknown_tool(name: str) -> Misbehaviour:
    return first_step(lambda: tool_use(name, {"command": "ls"}))
