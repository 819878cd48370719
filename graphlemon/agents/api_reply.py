"""What came back from the Messages API: a message, or a named problem that quotes what answered.

The SDK turns a body it cannot read as JSON into a plain string (an HTML page from a proxy or a captive
portal), raises a bare `JSONDecodeError` on a cut-off body, and builds a "message" with no fields from
JSON of another shape. So the backend reads the raw reply itself (`read_message`) and every shape ends as
a `Message`, or as a `ReplyProblem` that says what answered and quotes its first bytes:

| the reply (HTTP 200)                         | transient (retried) | what the person reads                         |
|----------------------------------------------|---------------------|-----------------------------------------------|
| empty body                                   | yes                 | "answered 200 with an empty body"             |
| JSON content type, body does not parse       | yes                 | "answered JSON that does not parse (cut off?)"|
| an error envelope (`type: error`) of a retryable kind | yes        | "answered an error in a 200: overloaded_error"|
| HTML                                         | no                  | "answered HTML (a proxy or captive portal?)"  |
| anything else that is not JSON               | no                  | "answered <content type>, not JSON"           |
| JSON that is not a message                   | no                  | "answered JSON that is not a message"         |
| JSON nested deeper than `MAX_DEPTH` levels   | no                  | "answered JSON nested too deeply to read"     |
| anything the SDK then cannot read as a message | no                | "answered a message GraphLemon cannot read"   |

Error statuses (4xx / 5xx) stay the SDK's `APIStatusError`; `describe_status_error` names an HTML or
other non-JSON error body the same way.
"""

from __future__ import annotations

import json
from typing import Any

QUOTE_BYTES = 160
MAX_DEPTH = 100  # a real message nests a few levels (a tool input a few more); far deeper strains every recursive step after
RETRYABLE_ERROR_TYPES = frozenset({"overloaded_error", "api_error", "rate_limit_error", "timeout_error"})


class ReplyProblem(Exception):
    """A 200 reply that is not a message; `transient`: the same request may well succeed when sent again."""

    def __init__(self, message: str, *, transient: bool) -> None:
        super().__init__(message)
        self.message, self.transient = message, transient


def read_message(raw: Any) -> Any:
    """The `anthropic.types.Message` in a raw SDK response (`messages.with_raw_response.create(...)`), or
    `ReplyProblem`."""
    http = raw.http_response
    body: bytes = http.content or b""
    kind = _content_type(http.headers)
    if not body.strip():
        raise ReplyProblem(f"the API answered {http.status_code} with an empty body{_kind_note(kind)}", transient=True)
    try:
        data = json.loads(body)
    except RecursionError:
        raise _too_deep(body) from None
    except ValueError:
        raise _not_json(body, kind) from None
    if _depth_over(data, MAX_DEPTH):
        raise _too_deep(body)
    if isinstance(data, dict) and data.get("type") == "error":
        error = data.get("error") if isinstance(data.get("error"), dict) else {}
        kind_ = str(error.get("type") or "error")
        raise ReplyProblem(
            f"the API answered an error in a {http.status_code} reply: {kind_}: {str(error.get('message') or '')[:300]}",
            transient=kind_ in RETRYABLE_ERROR_TYPES,
        )
    missing = _missing_fields(data)
    if missing:
        raise ReplyProblem(
            f"the API answered JSON that is not a message ({missing}): {quote(body)}", transient=False
        )
    try:
        return raw.parse()
    except Exception as exc:  # noqa: BLE001 - whatever the SDK cannot build is a reply no retry fixes, named
        raise ReplyProblem(
            f"the API answered a message GraphLemon cannot read ({type(exc).__name__}): {quote(body)}", transient=False
        ) from None


def describe_status_error(exc: Any) -> str:
    """`429 rate_limit_error: ...` for the API's own error envelope; for any other body (a proxy's HTML page,
    plain text) what answered and its first bytes."""
    kind = getattr(exc, "type", None) or ""
    if kind or isinstance(getattr(exc, "body", None), dict):
        message = getattr(exc, "api_message", None) or exc.message
        return f"{exc.status_code} {kind}: {message}".replace("  ", " ")
    response = getattr(exc, "response", None)
    body = response.content if response is not None else b""
    what = _not_json(body, _content_type(response.headers) if response is not None else "").message
    return f"{exc.status_code}: {what.removeprefix('the API answered ')}"


def quote(body: bytes | str, limit: int = QUOTE_BYTES) -> str:
    """The first `limit` bytes, as printable text in quotes (control characters shown as escapes)."""
    text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
    head = text[:limit]
    return json.dumps(head, ensure_ascii=False) + ("…" if len(text) > limit else "")


def _not_json(body: bytes, kind: str) -> ReplyProblem:
    head = body.lstrip()[:64].lower()
    if "html" in kind or head.startswith((b"<!doctype html", b"<html", b"<head", b"<body")):
        return ReplyProblem(
            f"the API answered HTML (a proxy or captive portal?): {quote(body)}; check ANTHROPIC_BASE_URL and "
            "the network's proxy",
            transient=False,
        )
    if kind.endswith("json") or head.startswith((b"{", b"[")):
        return ReplyProblem(f"the API answered JSON that does not parse (cut off?): {quote(body)}", transient=True)
    return ReplyProblem(f"the API answered {kind or 'no content type'}, not JSON: {quote(body)}", transient=False)


def _too_deep(body: bytes) -> ReplyProblem:
    return ReplyProblem(
        f"the API answered JSON nested too deeply to read (more than {MAX_DEPTH} levels): {quote(body)}",
        transient=False,
    )


def _depth_over(data: Any, limit: int) -> bool:
    """True when `data` nests more than `limit` lists or objects deep (walked without recursion)."""
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if not isinstance(value, dict | list):
            continue
        if depth > limit:
            return True
        stack.extend((item, depth + 1) for item in (value.values() if isinstance(value, dict) else value))
    return False


def _missing_fields(data: Any) -> str:
    if not isinstance(data, dict):
        return f"a JSON {type(data).__name__}, not an object"
    wanted = {"type": str, "content": list}  # a missing or invalid usage is agents/api_usage.py's
    wrong = [name for name, kind in wanted.items() if not isinstance(data.get(name), kind)]
    if wrong:
        return "no " + ", ".join(wrong)
    if data["type"] != "message":
        return f"type {data['type']!r}"
    return ""


def _content_type(headers: Any) -> str:
    return str((headers or {}).get("content-type") or "").split(";", 1)[0].strip().lower()


def _kind_note(kind: str) -> str:
    return f" ({kind})" if kind else ""
