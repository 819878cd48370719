"""Request validation for the fake Messages server: what the real API rejects with a 400.

Allowed keys come from the SDK's own request TypedDicts (`MessageCreateParams`,
`TextBlockParam`, `ToolUseBlockParam`, `ToolResultBlockParam`, `ThinkingBlockParam`,
`RedactedThinkingBlockParam`, `ToolParam`). A thinking block must come back with the signature the
server gave it (`signature(thinking)`): a changed byte is "Invalid signature in thinking block", as the
real API answers.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from anthropic import types as at
from anthropic.types import message_create_params

# allowed keys, straight from the SDK's request TypedDicts
TOP_KEYS = frozenset(message_create_params.MessageCreateParamsNonStreaming.__annotations__) | {"stream"}
BLOCK_KEYS = {
    "text": frozenset(at.TextBlockParam.__annotations__),
    "tool_use": frozenset(at.ToolUseBlockParam.__annotations__),
    "tool_result": frozenset(at.ToolResultBlockParam.__annotations__),
    "thinking": frozenset(at.ThinkingBlockParam.__annotations__),
    "redacted_thinking": frozenset(at.RedactedThinkingBlockParam.__annotations__),
}
_SIGNING_KEY = b"fake-messages-server"


def signature(thinking: str) -> str:
    """The signature the fake gives a thinking block (an HMAC of its text)."""
    return hmac.new(_SIGNING_KEY, thinking.encode(), hashlib.sha256).hexdigest()
TOOL_KEYS = frozenset(at.ToolParam.__annotations__)
MAX_CACHE_BREAKPOINTS = 4


class BadRequest(Exception):
    def __init__(self, message: str, status: int = 400, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status, self.kind = status, kind


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
    allowed = {"text", "tool_use", "thinking", "redacted_thinking"} if role == "assistant" else {"text", "tool_result"}
    results, uses = set(), set()
    for j, block in enumerate(content):
        _check_block(f"messages.{i}.content.{j}", block, allowed)
        if block["type"] == "tool_use":
            if block["id"] in uses:
                raise BadRequest(f"messages.{i}.content.{j}: `tool_use` ids must be unique")
            uses.add(block["id"])
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
    if block["type"] == "thinking" and not hmac.compare_digest(
        str(block.get("signature", "")), signature(str(block.get("thinking", "")))
    ):
        raise BadRequest(f"{where}: Invalid `signature` in `thinking` block")
    cache = block.get("cache_control")
    if cache is not None and cache.get("type") != "ephemeral":
        raise BadRequest(f"{where}.cache_control.type: Input should be 'ephemeral'")
