"""harnessred: misbehaviour scenarios for GraphLemon's anthropic harness, written blind (issue 48 follow-up).

Not a pytest module (nothing here is collected: see conftest.py). `run_scenarios.py` drives each scenario through
the real loop: `graphlemon run "Implement a snake game"` on a fresh copy of examples/snake, anthropic backend,
`ANTHROPIC_BASE_URL` pointing at `RTServer` (the fake Messages server of tests/fakes, plus two rules of the real
API the fake does not check), whose responder is the conformance model (tests/fakes/conformance_model.py, the snake
solution) except for the one misbehaviour a scenario injects into the turns it matches.

Every scenario states beforehand what a person must see. Common to all (checked for every run):

* U1 the task ends `done` or `blocked_pending_human` with a reason (never left running/queued, the command ends
  within the scenario's wall limit);
* U2 no Python traceback anywhere: the command's stdout/stderr, `graphlemon status` (both forms), every file under
  `.graphlemon/` (logs, transcripts, ledger, evidence packs) and, on the Prefect engine, every Prefect log of the run;
* U3 tokens bounded: the ledger's used tokens (input + output + cache read + cache write) <= `tokens_x` times B,
  where B is the same runner's conformant baseline (scenario S00, no misbehaviour) on the same engine;
* U4 the person's view (the run's output + `graphlemon status` + `graphlemon status TASK` + evidence packs) matches
  every regex in `person_must` (what happened is named);
* U5 the harness never sends a request the API would reject as malformed (any 4xx from the fake other than the
  scripted ones and the documented "prompt is too long" path).

Per scenario: `end`, `reason` (regex on blocked_reason), `turn_calls_max` (requests that reached the server for
the matched turns, all attempts of that role+unit together unless `per_attempt`), extra `checks` (names of
functions in run_scenarios.py).
"""

from __future__ import annotations

import base64
import itertools
import json
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/ -> `fakes`

from fakes.messages_server import FakeMessagesServer, RecordedRequest, Reply, error, raw, thinking, tool_use, tool_uses  # noqa: E402
from fakes.misbehaving_model import _without, turn_of  # noqa: E402

_rt_ids = itertools.count(1)

# A key-shaped secret set as the run's ANTHROPIC_API_KEY (U2/K01: never written down).
RUN_KEY = "sk-ant-api03-" + "HarnessRedRunKey0123456789" * 3 + "-AA"
SECRETS = {
    "anthropic": "sk-ant-api03-" + "ThinkSecretAbcdefghij0123456789" * 3 + "-QQ",
    "github": "ghp_" + "R3dT3amGithubT0kenAbcdef0123456789ab",
    "aws": "AKIA" + "R3DT3AMK3YID0001",
    "run_key": RUN_KEY,
}


# -- the server: the fake, plus what the real API also refuses ----------------------------------------------------


class RTServer(FakeMessagesServer):
    """FakeMessagesServer with: duplicate tool_use ids refused (the real API's 400 "`tool_use` ids must be
    unique"), a model's output capped at 32,000 tokens in the automatic usage (no model reply can cost more
    than max_tokens), and per-request bookkeeping (body bytes, the usage each message reply carried)."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.sizes: list[int] = []  # body bytes, aligned with self.requests
        self.usages: list[dict[str, int] | None] = []  # usage sent back, aligned with self.requests
        self.scripted: list[bool] = []  # True when the reply was the scenario's own (not the inner model's)
        self.current_scripted = threading.local()  # .value: the reply being sent is the scenario's own

    def __enter__(self) -> RTServer:
        super().__enter__()
        assert self._httpd is not None
        self._httpd.block_on_close = False  # a reply that never comes must not hold the runner at shutdown
        return self

    def handle(self, method: str, path: str, headers: dict[str, str], raw_body: bytes):  # type: ignore[override]
        try:
            body = json.loads(raw_body) if raw_body else None
        except ValueError:
            body = None
        dup = _duplicate_tool_use_id(body)
        if dup is not None:
            with self._lock:
                self.requests.append(RecordedRequest(method, path, headers, body, status=400))
                self.sizes.append(len(raw_body))
                self.usages.append(None)
                self.scripted.append(False)
            return (
                400,
                {},
                json.dumps({"type": "error", "error": {"type": "invalid_request_error", "message": dup}}).encode(),
            )
        self.current_scripted.value = False
        status, extra, payload = super().handle(method, path, headers, raw_body)
        with self._lock:
            self.sizes.append(len(raw_body))
            self.scripted.append(bool(getattr(self.current_scripted, "value", False)))
            self.usages.append(_usage_of(payload) if status == 200 else None)
        return status, extra, payload

    def _auto_usage(self, body: dict[str, Any], reply: Reply) -> dict[str, int]:
        usage = super()._auto_usage(body, reply)
        usage["output_tokens"] = min(usage["output_tokens"], 32_000)
        return usage


def _duplicate_tool_use_id(body: Any) -> str | None:
    if not isinstance(body, dict):
        return None
    for i, message in enumerate(body.get("messages") or []):
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, list):
            continue
        seen: set[str] = set()
        for j, block in enumerate(content):
            if isinstance(block, dict) and block.get("type") == "tool_use":
                if block.get("id") in seen:
                    return f"messages.{i}.content.{j}: `tool_use` ids must be unique"
                seen.add(block.get("id"))
    return None


def _usage_of(payload: bytes) -> dict[str, int] | None:
    try:
        data = json.loads(payload)
    except (ValueError, RecursionError):  # AMENDED after freeze: Z04's nested reply broke this bookkeeping
        return None
    usage = data.get("usage") if isinstance(data, dict) else None
    return usage if isinstance(usage, dict) else None


# -- injecting one misbehaviour ------------------------------------------------------------------------------------


@dataclass
class Ctx:
    body: dict[str, Any]
    step: int  # assistant messages so far in this request (the turn's step)
    n: int  # how many replies this scenario already injected (all turns)
    turn_n: int  # how many requests this matched turn already got (0 = first)
    key: tuple[str, str | None, int]
    inner_view: Callable[[], Reply]  # the conformance model's reply, as if the hidden steps never happened
    model: str


@dataclass
class Out:
    reply: Reply
    hide: bool = True  # hide this step from the inner model (its own script did not advance)


Behaviour = Callable[[Ctx], Out | Reply | None]


class Injector:
    """A responder: the inner model, except for `behaviour` in the turns that match (role, unit, attempts)."""

    def __init__(self, inner: Callable[[dict[str, Any]], Reply], sc: Scenario, server: RTServer | None = None) -> None:
        self.inner, self.sc, self.server = inner, sc, server
        self.injected = 0
        self.turn_requests: dict[tuple[str, str | None, int], int] = {}
        self.hidden: dict[tuple[str, str | None, int], set[int]] = {}

    def matches(self, key: tuple[str, str | None, int]) -> bool:
        role, unit, attempt = key
        sc = self.sc
        return (
            sc.role is not None
            and role == sc.role
            and (sc.unit is None or unit == sc.unit)
            and (sc.attempts is None or attempt in sc.attempts)
        )

    def __call__(self, body: dict[str, Any]) -> Reply:
        key = turn_of(body)
        step = sum(1 for m in body["messages"] if m["role"] == "assistant")
        if self.matches(key):
            turn_n = self.turn_requests.get(key, 0)
            self.turn_requests[key] = turn_n + 1
            hidden = self.hidden.setdefault(key, set())
            if self.sc.times is None or self.injected < self.sc.times:
                ctx = Ctx(body, step, self.injected, turn_n, key, lambda: self.inner(_without(body, hidden)),
                          body.get("model") or "claude-sonnet-5-5")  # fmt: skip
                out = self.sc.behaviour(ctx)
                if out is not None:
                    out = out if isinstance(out, Out) else Out(out)
                    self.injected += 1
                    if self.server is not None:
                        self.server.current_scripted.value = True
                    if out.hide and out.reply.raw is None and out.reply.status < 400:
                        hidden.add(step)
                    return out.reply
            return self.inner(_without(body, hidden))
        return self.inner(body)


# -- reply builders ------------------------------------------------------------------------------------------------


def message_dict(content: list[dict[str, Any]], *, model: str, stop_reason: Any = "end_turn",
                 usage: dict[str, Any] | None = None, drop: tuple[str, ...] = ()) -> dict[str, Any]:  # fmt: skip
    data = {
        "id": f"msg_rt_{next(_rt_ids):06d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage
        or {
            "input_tokens": 900,
            "output_tokens": 120,
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 0,
        },  # fmt: skip
    }
    return {k: v for k, v in data.items() if k not in drop}


def raw_message(content: list[dict[str, Any]], *, model: str, **kw: Any) -> Reply:
    return raw(json.dumps(message_dict(content, model=model, **kw), ensure_ascii=False).encode(), "application/json")


def with_blocks(answer: Reply, before: list[dict[str, Any]], after: list[dict[str, Any]] | None = None) -> Reply:
    return Reply(content=[*before, *answer.content, *(after or [])], stop_reason=answer.stop_reason)


def calls_of(reply: Reply) -> list[str]:
    return [b["name"] for b in reply.content if b.get("type") == "tool_use"]


HTML_PORTAL = (
    b"<!DOCTYPE html>\n<html><head><title>Airport Free WiFi - Terms</title></head>"
    b"<body><h1>Welcome!</h1><p>Accept the terms to continue browsing.</p><form action='/accept'>"
    b"<button>Accept</button></form></body></html>\n"
)
XML_S3 = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code><Message>Access Denied by corporate '
    b"gateway policy 7</Message><RequestId>4442587FB7D0A2F9</RequestId></Error>"
)


def sse_stream(model: str) -> bytes:
    events = [
        ("message_start", {"type": "message_start", "message": {
            "id": "msg_sse_1", "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": "Streaming hello"}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                           "usage": {"output_tokens": 3}}),
        ("message_stop", {"type": "message_stop"}),
    ]  # fmt: skip
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


def cut_mid_utf8(model: str) -> bytes:
    text_block = {"type": "text", "text": "Voilà — 日本語のテキストを読みます。 Next I read the files."}
    whole = json.dumps(message_dict([text_block], model=model), ensure_ascii=False).encode()
    at = whole.index("日".encode()) + 1  # one byte into a three-byte sequence
    return whole[:at]


def invalid_utf8(model: str) -> bytes:
    whole = json.dumps(message_dict([{"type": "text", "text": "Reading now: MARKER"}], model=model)).encode()
    return whole.replace(b"MARKER", b"caf\xe9 \xff\xfe ok")  # latin-1 bytes inside a UTF-8 JSON string


def deeply_nested_tool_use(model: str, depth: int = 50_000) -> bytes:
    head = json.dumps(message_dict([], model=model, stop_reason="tool_use"))
    block = ('{"type": "tool_use", "id": "toolu_rt_nested", "name": "write_file", "input": {"path": "snake/game.py", '
             '"content": ' + '{"a": ' * depth + "1" + "}" * depth + "}}")  # fmt: skip
    return head.replace('"content": []', '"content": [' + block + "]").encode()


def thinking_text(secret_line: str, size: int = 0) -> str:
    pad = (" I keep thinking about the grid." * (size // 32 + 1))[:size] if size else ""
    return f"Reviewing the config. {secret_line} I will not use any of it. Next: the work.{pad}"


# -- the scenarios ---------------------------------------------------------------------------------------------


@dataclass
class Scenario:
    sid: str
    title: str
    role: str | None  # the turns the behaviour applies to (None: no misbehaviour: the baseline)
    unit: str | None
    attempts: tuple[int, ...] | None
    behaviour: Behaviour
    end: str  # "done" | "blocked_pending_human"
    reason: str | None = None  # regex the blocked_reason must match
    person_must: list[str] = field(default_factory=list)  # regexes (case-insensitive) the person's view must match
    tokens_x: float = 1.5  # U3: ledger tokens <= tokens_x * B
    turn_calls_max: int | None = None  # requests for the matched turns (role+unit, all matched attempts)
    turn_calls_min: int | None = None
    checks: list[str] = field(default_factory=list)
    times: int | None = None  # replies the behaviour may give (None: every matched request)
    env: dict[str, str] = field(default_factory=dict)
    args: list[str] = field(default_factory=list)
    wall_s: int = 1500  # the command is killed after this (a FAIL of U1)
    prefect: bool = False  # run again on the Prefect engine
    acceptable_alt: str | None = None  # a stated alternative end that also passes (with its own person regex)
    acceptable_alt_person: list[str] = field(default_factory=list)
    notes: str = ""


def _never(ctx: Ctx) -> None:
    return None


S: list[Scenario] = []


def scenario(**kw: Any) -> Scenario:
    sc = Scenario(**kw)
    S.append(sc)
    return sc


scenario(sid="S00", title="baseline: a conformant server (no misbehaviour)", role=None, unit=None, attempts=None,
         behaviour=_never, end="done", tokens_x=1.0, prefect=True)  # fmt: skip

# ---- H: reply shapes -------------------------------------------------------------------------------------------

scenario(
    sid="H01", title="200 with a captive-portal HTML page labelled application/json, every planner request",
    role="planner", unit=None, attempts=None,
    behaviour=lambda c: raw(HTML_PORTAL, "application/json"),
    end="blocked_pending_human", reason="stage_failed",
    person_must=[r"(HTML|<!DOCTYPE|Airport Free WiFi)"], tokens_x=0.2, turn_calls_max=4, prefect=True,
    notes="GRAPHLEMON_RETRY_MAX=3: at most 4 requests; the person must be told the API answered an HTML page "
          "(issue 48 shape: a clear EXECUTOR_ERROR that quotes the first bytes), though the content type lies.",
)  # fmt: skip
scenario(
    sid="H02", title="200 application/xml (an S3-style gateway error), every request of tester scoring attempt 1",
    role="tester", unit="scoring", attempts=(1,),
    behaviour=lambda c: raw(XML_S3, "application/xml"),
    end="blocked_pending_human", reason="stage_failed",
    person_must=[r"(AccessDenied|<\?xml|xml)"], tokens_x=1.0, turn_calls_max=1,
    notes="docs/agents.md: another content type that is not JSON -> ExecutorGaveUp at once, quoting 160 bytes.",
)  # fmt: skip
scenario(
    sid="H03", title="HTTP 204 No Content (empty body), every request of the integrator's attempt 1",
    role="integrator", unit=None, attempts=(1,),
    behaviour=lambda c: raw(b"", "application/json", status=204),
    end="blocked_pending_human", reason="stage_failed",
    person_must=[r"(204|empty)"], tokens_x=1.1, turn_calls_max=4,
    notes="Not a message, not an error: retried as an empty body or refused at once; either way named.",
)  # fmt: skip


def _gzip_garbage(c: Ctx) -> Reply:
    r = raw(os.urandom(4096), "application/json")
    r.headers["content-encoding"] = "gzip"
    return r


scenario(
    sid="H04", title="200 with content-encoding gzip and a body that is not gzip, once (coder game attempt 1)",
    role="coder", unit="game", attempts=(1,), behaviour=_gzip_garbage, times=1,
    end="done", tokens_x=1.15,
    notes="A corrupt transfer is transient: retried like a cut-off body, and the run goes on.",
    acceptable_alt="blocked_pending_human", acceptable_alt_person=[r"(gzip|decod|decompress)"],
)  # fmt: skip
scenario(
    sid="H05", title="200 application/json holding a JSON array, every planner request",
    role="planner", unit=None, attempts=None,
    behaviour=lambda c: raw(b'[{"type": "text", "text": "hello"}]', "application/json"),
    end="blocked_pending_human", reason="stage_failed",
    person_must=[r"(not a message|\[\{)"], tokens_x=0.2, turn_calls_max=1,
    notes="docs/agents.md: JSON that is not a message -> ExecutorGaveUp at once.",
)  # fmt: skip
scenario(
    sid="H06", title="200 holding an overloaded_error envelope, every request of coder scoring attempt 1",
    role="coder", unit="scoring", attempts=(1,),
    behaviour=lambda c: raw(b'{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}'),
    end="blocked_pending_human", reason="stage_failed",
    person_must=[r"overloaded", r"(4 attempt|giving up|gave up)"], tokens_x=1.0, turn_calls_max=4, turn_calls_min=4,
    notes="docs/agents.md: a retryable error envelope at 200 is retried retry_max (3) times, then gives up.",
)  # fmt: skip


def _cut_utf8(c: Ctx) -> Reply | None:
    return raw(cut_mid_utf8(c.model), "application/json") if c.step == 1 else None


scenario(
    sid="H07", title="a message body cut in the middle of a UTF-8 sequence, once (coder board attempt 1, 2nd call)",
    role="coder", unit="board", attempts=(1,), behaviour=_cut_utf8, times=1,
    end="done", tokens_x=1.15,
    notes="docs/agents.md: a 200 whose JSON does not parse (cut off) is retried.",
)  # fmt: skip
scenario(
    sid="H08", title="a whole message holding invalid UTF-8 bytes (latin-1), every request of tester board attempt 1",
    role="tester", unit="board", attempts=(1,),
    behaviour=lambda c: raw(invalid_utf8(c.model), "application/json"),
    end="blocked_pending_human", reason="stage_failed",
    person_must=[r"(utf-?8|decode|not parse|could not be read|invalid|cut)"], tokens_x=1.0, turn_calls_max=4,
    notes="Bytes that are not UTF-8 are not a message: retried as unparsable JSON or refused at once, named.",
)  # fmt: skip
scenario(
    sid="H09", title="server-sent events (text/event-stream) where JSON was asked, every request of coder collision a1",
    role="coder", unit="collision", attempts=(1,),
    behaviour=lambda c: raw(sse_stream(c.model), "text/event-stream"),
    end="blocked_pending_human", reason="stage_failed",
    person_must=[r"(event-stream|event: message_start|stream)"], tokens_x=1.0, turn_calls_max=1, prefect=True,
    notes="docs/agents.md: a content type that is not JSON -> at once, quoting the first bytes; no streaming.",
)  # fmt: skip

# ---- Z: sizes --------------------------------------------------------------------------------------------------

BIG_TEXT = ("Let me think about this very carefully, step by step, again. " * 25_000)[:1_500_000]


scenario(
    sid="Z01", title="1.5 MB of text before the calls in every reply of coder board attempt 1",
    role="coder", unit="board", attempts=(1,),
    behaviour=lambda c: Out(with_blocks(c.inner_view(), [{"type": "text", "text": BIG_TEXT}]), hide=False),
    end="done", tokens_x=1.6, checks=["oversize_requests_at_most:3"],
    notes="Context budget: a text block over 16,000 characters is a stub once answered, so each huge reply is "
          "sent back at most once (bound: at most 3 requests over 700 kB, one per huge reply) and the stage ends.",
)  # fmt: skip

TWO_MB_LINE = "# " + "x" * 2_000_000 + "\n"


def _huge_input(c: Ctx) -> Out | None:
    if c.step == 0:
        return Out(tool_use("write_file", {"path": "snake/scoring.py", "content": TWO_MB_LINE}))
    if c.step == 1:
        return Out(tool_uses([("read_file", {"path": "snake/scoring.py"}),
                              ("search_text", {"pattern": "xxxx", "path": "snake"})]))  # fmt: skip
    return None


scenario(
    sid="Z02", title="a 2 MB single-line write_file input, then read_file and search_text of that line (coder scoring a1)",
    role="coder", unit="scoring", attempts=(1,), behaviour=_huge_input,
    end="done", tokens_x=1.6, checks=["oversize_requests_at_most:1", "tool_results_capped:17000"],
    notes="A tool input over 16,000 characters is a stub once answered; a tool result is capped at 16,000 "
          "characters (a 2 MB line included); the real file is written afterwards by the conformance steps.",
)  # fmt: skip

TINY_BLOCKS = [{"type": "text", "text": "."}] * 10_000


scenario(
    sid="Z03", title="10,000 one-character text blocks before the calls in every reply of tester game attempt 1",
    role="tester", unit="game", attempts=(1,),
    behaviour=lambda c: Out(with_blocks(c.inner_view(), list(TINY_BLOCKS)), hide=False),
    end="done", tokens_x=3.0,
    notes="No single reply can end a stage (issue 48): the harness must keep the conversation under the 200k-token "
          "window even when the size is block overhead, not characters.",
)  # fmt: skip


def _nested(c: Ctx) -> Reply | None:
    return raw(deeply_nested_tool_use(c.model), "application/json") if c.step == 0 else None


scenario(
    sid="Z04", title="a tool_use whose input nests 50,000 levels deep, once (coder game attempt 1)",
    role="coder", unit="game", attempts=(1,), behaviour=_nested, times=1,
    end="done", tokens_x=1.3, prefect=True,
    notes="JSON nested past Python's recursion limit must not be a RecursionError traceback.",
    acceptable_alt="blocked_pending_human", acceptable_alt_person=[r"(nest|deep|recursion|not parse|not a message)"],
)  # fmt: skip

# ---- T: tool calls ------------------------------------------------------------------------------------------------

scenario(
    sid="T01", title="an unknown tool (bash) with fresh arguments at every step of coder board attempt 1",
    role="coder", unit="board", attempts=(1,),
    behaviour=lambda c: tool_use("bash", {"command": f"ls -la /tmp/dir{c.step}"}),
    end="done", tokens_x=6.0, turn_calls_max=50, turn_calls_min=50,
    person_must=[r"(out of (model )?calls|out_of_turns|max_turns|ran out)"],
    checks=["unknown_tool_answer_lists_submit_output"],
    notes="Unknown tools are answered with the tool list (submit_output included) and not counted: the coder's "
          "50-call limit ends it (coder_out_of_turns), its tree is tested, attempt 2 succeeds.",
)  # fmt: skip


def _wrong_types(c: Ctx) -> Reply | None:
    if c.step:
        return None
    return tool_uses([
        ("write_file", {"path": 42, "content": ["not", "a", "string"]}),
        ("read_file", {"path": None}),
        ("edit_file", {"path": "snake/scoring.py", "old": {"x": 1}, "new": 3}),
        ("run_tests", {"targets": "tests"}),
    ])  # fmt: skip


scenario(
    sid="T02", title="four calls with wrong argument types in one reply, once (coder scoring attempt 1)",
    role="coder", unit="scoring", attempts=(1,), behaviour=_wrong_types,
    end="done", tokens_x=1.2, checks=["tool_errors_at_least:4"],
    notes="Each is a tool error returned to the model (bad arguments); the turn goes on.",
)  # fmt: skip


def _same_edit_reordered(c: Ctx) -> Reply:
    args = {"path": "snake/collision.py", "old": "def nothing_here():", "new": "def x(): pass"}
    if c.step % 2:
        args = dict(reversed(list(args.items())))
    return tool_use("edit_file", args)


scenario(
    sid="T03", title="the same failing edit forever, its keys in a different order every other step (coder collision a1)",
    role="coder", unit="collision", attempts=(1,), behaviour=_same_edit_reordered,
    end="done", tokens_x=1.4, turn_calls_max=6,
    person_must=[r"coder collision attempt 1\b.*repeat"],
    notes="Same tool, same arguments (key order is not an argument): answered once, 3 repeats end it.",
)  # fmt: skip


def _alternate(c: Ctx) -> Reply:
    if c.step % 2 == 0:
        return tool_use("read_file", {"path": "snake/__init__.py"})
    return tool_use("list_files", {"path": "snake"})


scenario(
    sid="T04", title="two read calls alternating forever (coder game attempt 1)",
    role="coder", unit="game", attempts=(1,), behaviour=_alternate,
    end="done", tokens_x=1.4, turn_calls_max=8, prefect=True,
    person_must=[r"coder game attempt 1\b.*repeat"],
    notes="'identical to an earlier one' (not only the previous): A,B,A,B... is repeats from the third call.",
)  # fmt: skip

MARKER = "HALF_WRITTEN_MARKER_7731"
_CUT_REASONS = ["max_tokens", "pause_turn", "model_context_window_exceeded", "length_cut_by_proxy", None]


def _cut_every_reason(c: Ctx) -> Reply | None:
    if c.step >= len(_CUT_REASONS):
        return None
    content = [{"type": "tool_use", "id": f"toolu_rt_cut{c.step}", "name": "write_file",
                "input": {"path": "snake/board.py", "content": f"{MARKER} = (\n    'half"}}]  # fmt: skip
    return raw_message(content, model=c.model, stop_reason=_CUT_REASONS[c.step])


scenario(
    sid="T05", title="a half-written write_file cut by max_tokens, pause_turn, context window, an unknown reason, null",
    role="coder", unit="board", attempts=(1,), behaviour=_cut_every_reason,
    end="done", tokens_x=1.4, checks=[f"marker_never_written:{MARKER}", "tool_skipped_at_least:4"],
    notes="Every stop reason other than tool_use/end_turn/stop_sequence may cut the call: not run. A null stop "
          "reason is not a normal stop either (5th reply); the half file must never reach a commit.",
)  # fmt: skip


def _dup_ids(c: Ctx) -> Reply | None:
    if c.step:
        return None
    content = [
        {"type": "tool_use", "id": "toolu_rt_dup", "name": "read_file", "input": {"path": "README.md"}},
        {"type": "tool_use", "id": "toolu_rt_dup", "name": "read_file", "input": {"path": "pyproject.toml"}},
    ]
    return raw_message(content, model=c.model, stop_reason="tool_use")


scenario(
    sid="T06", title="two tool_use blocks sharing one id, once (coder scoring attempt 1)",
    role="coder", unit="scoring", attempts=(1,), behaviour=_dup_ids, times=1,
    end="done", tokens_x=1.3,
    notes="The API refuses a conversation with duplicate tool_use ids; one malformed reply must not end the task.",
)  # fmt: skip


def _no_id(c: Ctx) -> Reply | None:
    if c.step:
        return None
    content = [{"type": "tool_use", "name": "read_file", "input": {"path": "README.md"}}]
    return raw_message(content, model=c.model, stop_reason="tool_use")


scenario(
    sid="T07", title="a tool_use block without an id, once (tester scoring attempt 1)",
    role="tester", unit="scoring", attempts=(1,), behaviour=_no_id, times=1,
    end="done", tokens_x=1.3,
    notes="A malformed block is not a KeyError: answered, skipped or retried; the run goes on.",
)  # fmt: skip


def _invalid_submit_forever(c: Ctx) -> Reply | None:
    view = c.inner_view()
    if "submit_output" not in calls_of(view):
        return None
    return tool_use("submit_output", {"bogus_field": c.turn_n, "summary": None})


scenario(
    sid="T08", title="work done, then an invalid and different submit_output at every later step (coder collision a1)",
    role="coder", unit="collision", attempts=(1,), behaviour=_invalid_submit_forever,
    end="done", tokens_x=6.0, turn_calls_max=50,
    person_must=[r"(out of (model )?calls|out_of_turns|max_turns|output_invalid|invalid output)"],
    notes="Each invalid output goes back as a tool error; nothing repeats, so the call limit (50) ends it; the "
          "coder's tree (correct code) is tested as the attempt and goes green.",
)  # fmt: skip

# ---- K: thinking -------------------------------------------------------------------------------------------------

_SECRET_LINE = (f"The env has {SECRETS['anthropic']} and token {SECRETS['github']}, AWS {SECRETS['aws']}, and the "
                f"run key {SECRETS['run_key']}.")  # fmt: skip
_REDACTED_DATA = base64.b64encode(f"opaque {SECRETS['run_key']} {SECRETS['github']}".encode()).decode() + \
    f"|{SECRETS['run_key']}"  # fmt: skip


def _thinking_secrets(c: Ctx) -> Out:
    view = c.inner_view()
    before = [thinking(thinking_text(_SECRET_LINE)), {"type": "redacted_thinking", "data": _REDACTED_DATA}]
    return Out(with_blocks(view, before), hide=False)


scenario(
    sid="K01", title="signed thinking + redacted_thinking holding four key-shaped secrets, every reply of coder scoring a1",
    role="coder", unit="scoring", attempts=(1,), behaviour=_thinking_secrets,
    end="done", tokens_x=1.4, checks=["no_secrets_written", "no_signature_400"], prefect=True,
    notes="Thinking goes back byte for byte (the fake checks the signature); nothing GraphLemon writes holds a "
          "secret (the .graphlemon tree, output, Prefect logs).",
)  # fmt: skip
scenario(
    sid="K02", title="replies holding only a 40k-character signed thinking block, every reply of coder game a1",
    role="coder", unit="game", attempts=(1,),
    behaviour=lambda c: Reply(content=[thinking(thinking_text("Nothing secret here.", 40_000))], stop_reason="end_turn"),
    end="done", tokens_x=1.4, turn_calls_max=2, checks=["no_signature_400"],
    person_must=[r"coder game attempt 1.*(no_tool_use|without (calling )?a tool|no tool)"],
    notes="A reply with no tool call: answered once, the second in a row ends it as no_tool_use.",
)  # fmt: skip

# ---- R: refusals -------------------------------------------------------------------------------------------------

scenario(
    sid="R01", title="a Spanish text refusal at every step of coder board attempt 1",
    role="coder", unit="board", attempts=(1,),
    behaviour=lambda c: Reply(content=[{"type": "text", "text": "Lo siento, pero no puedo ayudar con esa solicitud."}]),
    end="done", tokens_x=1.3, turn_calls_max=2,
    person_must=[r"coder board attempt 1", r"Lo siento"],
    notes="docs/agents.md: text refusals are recognised in English only; another language ends as no_tool_use "
          "with its last words quoted (2 replies).",
)  # fmt: skip


def _refuse_with_submit(c: Ctx) -> Reply | None:
    view = c.inner_view()
    if "submit_output" not in calls_of(view):
        return None
    return Reply(content=[{"type": "text", "text": "I will stop here."}, *view.content], stop_reason="refusal")


scenario(
    sid="R02", title="stop_reason refusal on a reply that also carries a valid submit_output (coder collision a1)",
    role="coder", unit="collision", attempts=(1,), behaviour=_refuse_with_submit,
    end="done", tokens_x=1.3,
    person_must=[r"coder collision attempt 1.*refus"],
    notes="A refusal ends the attempt at once and its tool call is not run (not accepted as the answer); the "
          "coder's tree is tested as the attempt.",
)  # fmt: skip
scenario(
    sid="R04", title="'**I must decline.**' in markdown bold, every request of the integrator's attempt 1",
    role="integrator", unit=None, attempts=(1,),
    behaviour=lambda c: Reply(content=[{"type": "text", "text": "**I must decline.** This request asks me to "
                                                                 "write tests I am not comfortable writing."}]),
    end="blocked_pending_human", reason="stage_failed", tokens_x=1.1, turn_calls_max=2,
    person_must=[r"refused", r"I must decline"],
    notes="Integrator: 'other roles' stages fail as before (OUTPUT_INVALID naming the stop reason)'; the stop "
          "reason must be refused (its first sentence says 'I must decline', bold markers aside).",
)  # fmt: skip
scenario(
    sid="R05", title="'I can’t help with that.' with a typographic apostrophe, every request of coder scoring a1",
    role="coder", unit="scoring", attempts=(1,),
    behaviour=lambda c: Reply(content=[{"type": "text", "text": "I can\u2019t help with that request."}]),
    end="done", tokens_x=1.3, turn_calls_max=2, prefect=True,
    person_must=[r"coder scoring attempt 1.*refus", r"I can\u2019t"],
    notes="Models write U+2019 as often as ASCII; a refusal in English is a refusal.",
)  # fmt: skip

# ---- U: usage ----------------------------------------------------------------------------------------------------


def _bad_usage(c: Ctx) -> Out:
    view = c.inner_view()
    if c.turn_n % 2 == 0:
        bad = {"input_tokens": -100_000, "output_tokens": -5, "cache_read_input_tokens": -7,
               "cache_creation_input_tokens": -1}  # fmt: skip
        return Out(Reply(content=view.content, stop_reason=view.stop_reason, usage=bad), hide=False)
    content = [dict(b) for b in view.content]
    return Out(raw_message(content, model=c.model, stop_reason=view.stop_reason, drop=("usage",)), hide=False)


scenario(
    sid="U01", title="usage negative (even steps) or missing (odd steps) in every reply of tester board attempt 1",
    role="tester", unit="board", attempts=(1,), behaviour=_bad_usage,
    end="done", tokens_x=1.2, checks=["no_negative_usage"], args=["--budget-tokens", "50000000"],
    notes="Nothing negative is recorded; a negative usage cannot refund the budget; a missing usage is not a crash.",
)  # fmt: skip


def _huge_usage(c: Ctx) -> Out | None:
    if c.turn_n:
        return None
    view = c.inner_view()
    huge = {"input_tokens": 10**15, "output_tokens": 10**15, "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 0}  # fmt: skip
    return Out(Reply(content=view.content, stop_reason=view.stop_reason, usage=huge), hide=False)


scenario(
    sid="U02", title="one reply claiming 10^15 input and output tokens (coder board attempt 1), budget 5M tokens",
    role="coder", unit="board", attempts=(1,), behaviour=_huge_usage, times=1,
    end="blocked_pending_human", reason="budget_exceeded", tokens_x=10**10,
    person_must=[r"budget"], checks=["no_request_after_huge_usage", "finite_costs"],
    args=["--budget-tokens", "5000000"],
    notes="The usage is recorded as sent (it was billed); the next call's pre-flight refuses: no request goes out "
          "after it; the task blocks budget_exceeded; costs stay finite numbers.",
)  # fmt: skip

# ---- N: talking, rate limits, hangs, empty replies ---------------------------------------------------------------

scenario(
    sid="N01", title="429 with retry-after one day (retry-after: 86400, retry-after-ms: 86400000), every planner request",
    role="planner", unit=None, attempts=None,
    behaviour=lambda c: error(429, "rate_limit_error", "Daily request limit reached",
                              headers={"retry-after": "86400", "retry-after-ms": "86400000"}),  # fmt: skip
    end="blocked_pending_human", reason="stage_failed", tokens_x=0.2, wall_s=300,
    person_must=[r"(429|rate.?limit)"],
    notes="A person must not face a run that silently sleeps a day: within 300 s the task blocks naming the "
          "rate limit (or the wait it was asked for).",
)  # fmt: skip


def _hang_once(c: Ctx) -> Reply | None:
    if c.turn_n:
        return None
    r = Reply(content=[{"type": "text", "text": "late"}], delay_s=3600)
    return r


scenario(
    sid="N02", title="the server reads the request and never answers, once (coder scoring attempt 1, first call)",
    role="coder", unit="scoring", attempts=(1,), behaviour=_hang_once, times=1,
    end="done", tokens_x=1.15, env={"GRAPHLEMON_REQUEST_TIMEOUT_S": "15"},
    checks=["wall_at_most_baseline_plus:180"],
    notes="A request timeout (15 s here) is retried; the run is at most 3 minutes slower than the baseline.",
)  # fmt: skip
scenario(
    sid="N03", title="a planner that only talks (a different paragraph every reply), every planner request",
    role="planner", unit=None, attempts=None,
    behaviour=lambda c: Reply(content=[{"type": "text", "text": f"Here is my plan, version {c.n}: first the board, "
                                                                 "then collisions, then scoring. Shall I go on?"}]),
    end="blocked_pending_human", tokens_x=0.3,
    person_must=[r"planner", r"(no_tool_use|without (calling )?a tool|no tool|Shall I go on)"],
    notes="Each planner turn ends no_tool_use after 2 replies; the drafts are checked (none), the plan attempts "
          "continue, then the task blocks with a reason naming the planner's turns.",
)  # fmt: skip
scenario(
    sid="N04", title="a message with an empty content list, every request of coder game attempt 1",
    role="coder", unit="game", attempts=(1,),
    behaviour=lambda c: Reply(content=[], stop_reason="end_turn"),
    end="done", tokens_x=1.3, turn_calls_max=2,
    person_must=[r"coder game attempt 1.*(no_tool_use|without (calling )?a tool|no tool|empty)"],
    notes="An empty reply is a reply without a tool call (answered once, then no_tool_use); an empty assistant "
          "message is never sent back (the API refuses it).",
)  # fmt: skip
scenario(
    sid="N05", title="an empty and a whitespace-only text block before the calls, every reply of tester game a1",
    role="tester", unit="game", attempts=(1,),
    behaviour=lambda c: Out(with_blocks(c.inner_view(), [{"type": "text", "text": ""},
                                                         {"type": "text", "text": " \n\t "}]), hide=False),
    end="done", tokens_x=1.2,
    notes="The API refuses empty/whitespace-only text blocks; the harness must not send them back as they came.",
)  # fmt: skip


BY_ID = {sc.sid: sc for sc in S}
