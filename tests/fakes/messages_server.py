"""A fake Anthropic Messages API on 127.0.0.1, for the real `anthropic` SDK (T2 tests, benchmarks).

Replies are built from the SDK's own response types (`anthropic.types.Message`,
`TextBlock`, `ToolUseBlock`, `Usage`) and serialised with `model_dump_json()`.
Requests are validated the way the real API does (unknown fields, block shapes
from the SDK's `*Param` TypedDicts, tool_use / tool_result pairing, cache
breakpoints, auth headers): a malformed one gets a 400 `invalid_request_error`
envelope. Every request is recorded in `server.requests`.

Scripting, per test:

    with FakeMessagesServer(api_key="sk-ant-test-...") as server:
        server.queue(
            rate_limited(retry_after=0.05),            # 429 + retry-after
            overloaded(),                              # 529
            tool_use("write_file", {"path": "tests/a.py", "content": "..."}),
            text('{"ok": true}', usage={"input_tokens": 10, "output_tokens": 5}),
        )
        ... AgentSettings(base_url=server.base_url, api_key=...) ...
        assert server.requests[2].body["messages"][-1]["content"][0]["type"] == "tool_result"

Replies are consumed in order; with the queue empty the server answers with
`server.responder(body)` if set (benchmarks), else a 500 that names the problem.
A reply with no explicit usage gets a deterministic one computed from the
request (cached prefix = tools + system when they carry cache_control: the first
request writes the cache, later ones read it).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from anthropic import types as at
from anthropic.types import message_create_params

_ids = itertools.count(1)

# allowed keys, straight from the SDK's request TypedDicts
TOP_KEYS = frozenset(message_create_params.MessageCreateParamsNonStreaming.__annotations__) | {"stream"}
BLOCK_KEYS = {
    "text": frozenset(at.TextBlockParam.__annotations__),
    "tool_use": frozenset(at.ToolUseBlockParam.__annotations__),
    "tool_result": frozenset(at.ToolResultBlockParam.__annotations__),
}
TOOL_KEYS = frozenset(at.ToolParam.__annotations__)
MAX_CACHE_BREAKPOINTS = 4


class BadRequest(Exception):
    def __init__(self, message: str, status: int = 400, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status, self.kind = status, kind


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    status: int = 0
    at: float = field(default_factory=time.monotonic)


@dataclass
class Reply:
    """One scripted reply: a message (`content`) or an HTTP error (`status` >= 400)."""

    status: int = 200
    content: list[dict[str, Any]] = field(default_factory=list)
    stop_reason: str | None = None
    usage: dict[str, int] | None = None
    model: str | None = None
    error_type: str = "api_error"
    error_message: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


def text(
    content: str, *, usage: dict[str, int] | None = None, stop_reason: str = "end_turn", model: str | None = None
) -> Reply:
    return Reply(content=[{"type": "text", "text": content}], stop_reason=stop_reason, usage=usage, model=model)


def tool_use(
    name: str, input: dict[str, Any], *, preamble: str | None = None, usage: dict[str, int] | None = None
) -> Reply:
    return tool_uses([(name, input)], preamble=preamble, usage=usage)


def tool_uses(
    calls: list[tuple[str, dict[str, Any]]], *, preamble: str | None = None, usage: dict[str, int] | None = None
) -> Reply:
    content: list[dict[str, Any]] = [{"type": "text", "text": preamble}] if preamble else []
    content += [{"type": "tool_use", "id": f"toolu_{next(_ids):06d}", "name": n, "input": i} for n, i in calls]
    return Reply(content=content, stop_reason="tool_use", usage=usage)


def error(
    status: int, kind: str, message: str, *, retry_after: float | None = None, headers: dict[str, str] | None = None
) -> Reply:
    h = dict(headers or {})
    if retry_after is not None:
        h["retry-after"] = f"{retry_after:g}"
    return Reply(status=status, error_type=kind, error_message=message, headers=h)


def rate_limited(retry_after: float | None = None) -> Reply:
    return error(
        429,
        "rate_limit_error",
        "Number of request tokens has exceeded your per-minute rate limit",
        retry_after=retry_after,
    )


def overloaded(retry_after: float | None = None) -> Reply:
    return error(529, "overloaded_error", "Overloaded", retry_after=retry_after)


def server_error(status: int = 500) -> Reply:
    return error(status, "api_error", "Internal server error")


class FakeMessagesServer:
    def __init__(self, *, api_key: str | None = None, default_model: str = "claude-sonnet-4-5") -> None:
        self.api_key = api_key
        self.default_model = default_model
        self.requests: list[RecordedRequest] = []
        self.responder: Callable[[dict[str, Any]], Reply] | None = None
        self._queue: list[Reply] = []
        self._lock = threading.Lock()
        self._cached_prefixes: set[str] = set()
        self._httpd: ThreadingHTTPServer | None = None

    # -- scripting ----------------------------------------------------------------------------
    def queue(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    @property
    def pending(self) -> int:
        return len(self._queue)

    @property
    def messages_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.startswith("/v1/messages")]

    # -- lifecycle ----------------------------------------------------------------------------
    def __enter__(self) -> FakeMessagesServer:
        server = self

        class Handler(_Handler):
            fake = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    @property
    def base_url(self) -> str:
        assert self._httpd is not None, "use FakeMessagesServer as a context manager"
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    # -- handling -----------------------------------------------------------------------------
    def handle(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> tuple[int, dict[str, str], bytes]:
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode(errors="replace")
        record = RecordedRequest(method, path, headers, body)
        with self._lock:
            self.requests.append(record)
        try:
            if method != "POST" or path.split("?")[0] != "/v1/messages":
                raise BadRequest(f"Not found: {method} {path}", 404, "not_found_error")
            self._check_auth(headers)
            validate_request(body)
            reply = self._next_reply(body)
        except BadRequest as exc:
            record.status = exc.status
            return exc.status, {}, _error_body(exc.kind, str(exc))
        if reply.delay_s:
            time.sleep(reply.delay_s)
        record.status = reply.status
        if reply.status >= 400:
            return reply.status, reply.headers, _error_body(reply.error_type, reply.error_message)
        return 200, reply.headers, self._message(body, reply).model_dump_json().encode()

    def _check_auth(self, headers: dict[str, str]) -> None:
        bearer = headers.get("authorization", "")
        key = headers.get("x-api-key") or (bearer[7:] if bearer.lower().startswith("bearer ") else "")
        if not key:
            raise BadRequest("x-api-key or authorization header is required", 401, "authentication_error")
        if self.api_key is not None and key != self.api_key:
            raise BadRequest("invalid x-api-key", 401, "authentication_error")
        if not headers.get("anthropic-version"):
            raise BadRequest("anthropic-version header is required")

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.pop(0)
        if self.responder is not None:
            return self.responder(body)
        return error(500, "api_error", "fake server: no scripted reply left for this request")

    def _message(self, body: dict[str, Any], reply: Reply) -> at.Message:
        blocks: list[at.ContentBlock] = []
        for block in reply.content:
            if block["type"] == "text":
                blocks.append(at.TextBlock(type="text", text=block["text"]))
            else:
                blocks.append(
                    at.ToolUseBlock(type="tool_use", id=block["id"], name=block["name"], input=block["input"])
                )
        usage = reply.usage if reply.usage is not None else self._auto_usage(body, reply)
        return at.Message(
            id=f"msg_fake_{next(_ids):06d}",
            type="message",
            role="assistant",
            model=reply.model or body.get("model") or self.default_model,
            content=blocks,
            stop_reason=reply.stop_reason
            or ("tool_use" if any(b["type"] == "tool_use" for b in reply.content) else "end_turn"),
            stop_sequence=None,
            usage=at.Usage(
                input_tokens=usage.get("input_tokens", 0),
                output_tokens=usage.get("output_tokens", 0),
                cache_read_input_tokens=usage.get("cache_read_input_tokens", 0),
                cache_creation_input_tokens=usage.get("cache_creation_input_tokens", 0),
            ),
        )

    def _auto_usage(self, body: dict[str, Any], reply: Reply) -> dict[str, int]:
        prefix = json.dumps([body.get("tools"), body.get("system")], sort_keys=True)
        prefix_tokens = len(prefix) // 4
        rest_tokens = max(1, len(json.dumps(body.get("messages"))) // 4)
        usage = {"input_tokens": rest_tokens, "output_tokens": max(1, len(json.dumps(reply.content)) // 4)}
        if '"cache_control"' in prefix:
            digest = hashlib.sha256(prefix.encode()).hexdigest()
            with self._lock:
                seen = digest in self._cached_prefixes
                self._cached_prefixes.add(digest)
            usage["cache_read_input_tokens" if seen else "cache_creation_input_tokens"] = prefix_tokens
        else:
            usage["input_tokens"] += prefix_tokens
        return usage


class _Handler(BaseHTTPRequestHandler):
    fake: FakeMessagesServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as separate writes

    def _serve(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        status, extra, payload = self.fake.handle(self.command, self.path, headers, raw)
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.send_header("request-id", f"req_fake_{next(_ids):06d}")
        for k, v in extra.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(payload)

    do_POST = do_GET = _serve

    def log_message(self, *args: object) -> None:  # keep test output quiet
        pass


def _error_body(kind: str, message: str) -> bytes:
    return json.dumps(
        {"type": "error", "error": {"type": kind, "message": message}, "request_id": f"req_fake_{next(_ids):06d}"}
    ).encode()


# -- request validation (what the real API rejects with 400) -----------------------------------


def validate_request(body: Any) -> None:
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    extra = set(body) - TOP_KEYS
    if extra:
        raise BadRequest(f"{sorted(extra)[0]}: Extra inputs are not permitted")
    if not isinstance(body.get("model"), str) or not body["model"]:
        raise BadRequest("model: Field required")
    if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
        raise BadRequest("max_tokens: must be an integer >= 1")
    breakpoints = _check_system(body.get("system")) + _check_tools(body.get("tools"))
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("messages: at least one message is required")
    if messages[0].get("role") != "user":
        raise BadRequest("messages: the first message must use the user role")
    previous_uses: set[str] = set()
    for i, message in enumerate(messages):
        breakpoints += _check_message(i, message, previous_uses)
        uses = {b["id"] for b in _blocks(message) if b.get("type") == "tool_use"}
        if previous_uses and message.get("role") == "assistant":
            raise BadRequest(
                f"messages.{i}: tool_use ids were found without tool_result blocks immediately after: {sorted(previous_uses)}"
            )
        previous_uses = uses if message.get("role") == "assistant" else set()
    if previous_uses:
        raise BadRequest("messages: the final assistant tool_use blocks have no tool_result")
    if breakpoints > MAX_CACHE_BREAKPOINTS:
        raise BadRequest(
            f"A maximum of {MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. Found {breakpoints}."
        )


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return content if isinstance(content, list) else []


def _check_system(system: Any) -> int:
    if system is None or isinstance(system, str):
        return 0
    if not isinstance(system, list):
        raise BadRequest("system: must be a string or a list of text blocks")
    for j, block in enumerate(system):
        _check_block(f"system.{j}", block, {"text"})
    return sum(1 for b in system if b.get("cache_control"))


def _check_tools(tools: Any) -> int:
    if tools is None:
        return 0
    if not isinstance(tools, list):
        raise BadRequest("tools: must be a list")
    names = set()
    for j, t in enumerate(tools):
        if not isinstance(t, dict) or set(t) - TOOL_KEYS:
            raise BadRequest(f"tools.{j}: Extra inputs are not permitted")
        name = t.get("name")
        if not isinstance(name, str) or not name or len(name) > 128 or not all(c.isalnum() or c in "_-" for c in name):
            raise BadRequest(f"tools.{j}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,128}}$'")
        if name in names:
            raise BadRequest(f"tools: Tool names must be unique ({name})")
        names.add(name)
        schema = t.get("input_schema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            raise BadRequest(f"tools.{j}.custom.input_schema: JSON schema must have type 'object'")
    return sum(1 for t in tools if t.get("cache_control"))


def _check_message(i: int, message: Any, previous_uses: set[str]) -> int:
    if not isinstance(message, dict) or set(message) - {"role", "content"}:
        raise BadRequest(f"messages.{i}: a message has exactly 'role' and 'content'")
    role, content = message.get("role"), message.get("content")
    if role not in ("user", "assistant"):
        raise BadRequest(f"messages.{i}.role: Input should be 'user' or 'assistant'")
    if isinstance(content, str):
        if not content.strip():
            raise BadRequest(f"messages.{i}: text content blocks must be non-empty")
        content = [{"type": "text", "text": content}]
    if not isinstance(content, list) or not content:
        raise BadRequest(f"messages.{i}.content: must be a non-empty string or list")
    allowed = {"text", "tool_use"} if role == "assistant" else {"text", "tool_result"}
    results = set()
    for j, block in enumerate(content):
        _check_block(f"messages.{i}.content.{j}", block, allowed)
        if block["type"] == "tool_result":
            if block.get("tool_use_id") not in previous_uses:
                raise BadRequest(
                    f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: {block.get('tool_use_id')}"
                )
            results.add(block["tool_use_id"])
    if previous_uses and results != previous_uses:
        raise BadRequest(
            f"messages.{i}: tool_use ids were found without tool_result blocks immediately after: {sorted(previous_uses - results)}"
        )
    return sum(1 for b in content if b.get("cache_control"))


def _check_block(where: str, block: Any, allowed: set[str]) -> None:
    if not isinstance(block, dict) or block.get("type") not in allowed:
        raise BadRequest(
            f"{where}: Input tag {block.get('type') if isinstance(block, dict) else block!r} is not allowed here"
        )
    extra = set(block) - BLOCK_KEYS[block["type"]]
    if extra:
        raise BadRequest(f"{where}.{sorted(extra)[0]}: Extra inputs are not permitted")
    if block["type"] == "text" and (not isinstance(block.get("text"), str) or not block["text"].strip()):
        raise BadRequest(f"{where}: text content blocks must be non-empty")
    if block["type"] == "tool_use" and not (
        isinstance(block.get("id"), str) and isinstance(block.get("name"), str) and isinstance(block.get("input"), dict)
    ):
        raise BadRequest(f"{where}: tool_use needs id, name and an object input")
    if block["type"] == "tool_result" and not isinstance(block.get("content", ""), str | list):
        raise BadRequest(f"{where}.content: must be a string or a list of blocks")
    cache = block.get("cache_control")
    if cache is not None and cache.get("type") != "ephemeral":
        raise BadRequest(f"{where}.cache_control.type: Input should be 'ephemeral'")
