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

A reply may carry thinking blocks (`thinking(text)`: signed by the server; a changed block sent back is a
400 "Invalid signature in thinking block"), any stop reason (`refusal`, `model_context_window_exceeded`,
one the SDK does not know), or raw bytes with any content type (`raw(b"<html>...", "text/html")`: what a
proxy or captive portal answers). `context_window` (tokens, 4 characters each) answers an oversized
request with the API's 400 "prompt is too long".

Replies are consumed in order; with the queue empty the server answers with
`server.responder(body)` if set (benchmarks), else a 500 that names the problem.
A reply with no explicit usage gets a deterministic one computed from the
request the way the API counts prompt caching (`_auto_usage`: the longest prefix
up to a cache breakpoint that an earlier request wrote is read, the rest up to the
last breakpoint is written, what follows is input).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import threading
import time
import typing
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from anthropic import types as at

from .messages_validation import BadRequest, signature, validate_request

_ids = itertools.count(1)


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
    raw: bytes | None = None  # sent as it is (with `content_type`), instead of a message
    content_type: str = "application/json"


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


def raw(body: bytes, content_type: str = "application/json", *, status: int = 200) -> Reply:
    """Bytes as they are: an HTML page, an empty body, JSON cut off, JSON that is not a message."""
    return Reply(status=status, raw=body, content_type=content_type)


def thinking(text: str) -> dict[str, Any]:
    """A thinking block for `Reply.content`, signed by the server."""
    return {"type": "thinking", "thinking": text, "signature": signature(text)}


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
    def __init__(
        self, *, api_key: str | None = None, default_model: str = "claude-sonnet-5-5", context_window: int | None = None
    ) -> None:
        self.api_key = api_key
        self.context_window = context_window  # tokens (4 characters each); None: no limit
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
            self._check_size(raw)
            reply = self._next_reply(body)
        except BadRequest as exc:
            record.status = exc.status
            return exc.status, {}, _error_body(exc.kind, str(exc))
        if reply.delay_s:
            time.sleep(reply.delay_s)
        record.status = reply.status
        if reply.raw is not None:
            return reply.status, {"content-type": reply.content_type, **reply.headers}, reply.raw
        if reply.status >= 400:
            return reply.status, reply.headers, _error_body(reply.error_type, reply.error_message)
        return 200, reply.headers, self._message_json(body, reply)

    def _check_auth(self, headers: dict[str, str]) -> None:
        bearer = headers.get("authorization", "")
        key = headers.get("x-api-key") or (bearer[7:] if bearer.lower().startswith("bearer ") else "")
        if not key:
            raise BadRequest("x-api-key or authorization header is required", 401, "authentication_error")
        if self.api_key is not None and key != self.api_key:
            raise BadRequest("invalid x-api-key", 401, "authentication_error")
        if not headers.get("anthropic-version"):
            raise BadRequest("anthropic-version header is required")

    def _check_size(self, raw: bytes) -> None:
        tokens = len(raw) // 4
        if self.context_window is not None and tokens > self.context_window:
            raise BadRequest(f"prompt is too long: {tokens} tokens > {self.context_window} maximum")

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.pop(0)
        if self.responder is not None:
            return self.responder(body)
        return error(500, "api_error", "fake server: no scripted reply left for this request")

    def _message_json(self, body: dict[str, Any], reply: Reply) -> bytes:
        """The reply as the API's JSON; a stop reason the SDK does not know yet (a future one) is sent as it is."""
        known = reply.stop_reason in typing.get_args(at.StopReason)
        message = self._message(body, reply if known or reply.stop_reason is None else replace(reply, stop_reason=None))
        data = message.model_dump(mode="json")
        if not known and reply.stop_reason is not None:
            data["stop_reason"] = reply.stop_reason
        return json.dumps(data).encode()

    def _message(self, body: dict[str, Any], reply: Reply) -> at.Message:
        blocks: list[at.ContentBlock] = []
        for block in reply.content:
            if block["type"] == "text":
                blocks.append(at.TextBlock(type="text", text=block["text"]))
            elif block["type"] == "thinking":
                blocks.append(at.ThinkingBlock(type="thinking", thinking=block["thinking"], signature=block["signature"]))
            elif block["type"] == "redacted_thinking":
                blocks.append(at.RedactedThinkingBlock(type="redacted_thinking", data=block["data"]))
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
        """Usage the way the API counts it with prompt caching: the request is tools, then system blocks, then
        messages; each block with cache_control is a breakpoint. The longest breakpoint prefix an earlier request
        wrote is read from the cache, the rest up to the last breakpoint is written, what follows it is input.
        Tokens are characters / 4 of the blocks' JSON (cache_control itself not counted)."""
        pieces: list[tuple[str, bool]] = []  # (the block's JSON, is a breakpoint) in request order
        for tool in body.get("tools") or []:
            pieces.append(_piece(tool))
        system = body.get("system")
        for block in [{"type": "text", "text": system}] if isinstance(system, str) else system or []:
            pieces.append(_piece(block))
        for message in body.get("messages") or []:
            content = message.get("content")
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
            for block in blocks:
                pieces.append(_piece({**block, "_role": message.get("role")}))
        digest, boundaries, size = hashlib.sha256(), [], 0  # (prefix digest, tokens, a breakpoint?) per block
        for text, mark in pieces:
            size += len(text)
            digest.update(text.encode())
            boundaries.append((digest.copy().hexdigest(), size // 4, mark))
        total = max(1, size // 4)
        marked = [(key, tokens) for key, tokens, mark in boundaries if mark]
        with self._lock:  # a hit is looked up at every block boundary; only breakpoints write
            read = max((tokens for key, tokens, _ in boundaries if key in self._cached_prefixes), default=0)
            self._cached_prefixes.update(key for key, _ in marked)
        written = max(0, (marked[-1][1] if marked else 0) - read)
        return {
            "input_tokens": max(1, total - read - written),
            "output_tokens": max(1, len(json.dumps(reply.content)) // 4),
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": written,
        }


def _piece(block: dict[str, Any]) -> tuple[str, bool]:
    """One block's JSON (without cache_control) and whether it carries a cache breakpoint."""
    clean = {k: v for k, v in block.items() if k != "cache_control"}
    return json.dumps(clean, sort_keys=True, ensure_ascii=False), "cache_control" in block


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
        extra = dict(extra)
        self.send_header("content-type", extra.pop("content-type", "application/json"))
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
