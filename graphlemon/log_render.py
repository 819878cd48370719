"""An execution log for people: each line's time, kind and a sentence, the bulky part (tool arguments and results,
a test run's output) kept aside to be shown collapsed. One renderer for the console's log viewer and `graphlemon logs`.

A log line is `<ISO time> [<source>] <words...>`; an agent line ends with its event word and a JSON object
(`... coder scripted model=x tool_call {"tool": ...}`). Lines indented under a line (a test run's output tail)
belong to it. The text is read as written: nothing is dropped, a line that fits no shape is shown as it is.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel

SHORT_VALUE_CHARS = 60
CONTINUATION = "    "


class LogEntry(BaseModel):
    ts: str | None = None  # ISO time as written in the log
    source: str | None = None  # node, agent, tests, ... (the bracketed word)
    kind: str  # what happened: the agent's event (tool_call, usage...) or the source
    text: str  # one line for people
    detail: str | None = None  # shown collapsed: pretty JSON or the indented lines under the line
    detail_kind: Literal["json", "text"] | None = None
    offset: int | None = None  # the byte offset of its first line in the log (a permalink to the line), when known


def render(text: str, start: int | None = None) -> list[LogEntry]:
    """The entries of a piece of log (whole lines); lines indented under a line join its detail. `start`: the byte
    offset of `text` in its log, so each entry carries its own (`offset`)."""
    entries: list[LogEntry] = []
    below: list[str] = []
    at = start
    for line in text.split("\n"):  # the log's own line ends (offsets count its bytes exactly)
        here, at = at, None if at is None else at + len(line.encode("utf-8", "surrogatepass")) + 1
        raw = line.removesuffix("\r")
        if raw.startswith(CONTINUATION) and entries and entries[-1].detail_kind != "json":
            below.append(raw[len(CONTINUATION) :])
            entries[-1] = entries[-1].model_copy(update={"detail": "\n".join(below), "detail_kind": "text"})
            continue
        below = []
        if raw.strip():
            entries.append(render_line(raw).model_copy(update={"offset": here}))
    return entries


def render_line(raw: str) -> LogEntry:
    ts, rest = _time(raw)
    if ts is None or not rest.startswith("["):
        return LogEntry(ts=ts, kind="text", text=raw if ts is None else rest)
    source, _, rest = rest[1:].partition("] ")
    if source != "agent":
        return LogEntry(ts=ts, source=source, kind=source, text=rest)
    words, payload = _split_payload(rest)
    if not words or payload is None:  # an agent's plain line: as written
        return LogEntry(ts=ts, source=source, kind=source, text=rest)
    event, head = words[-1], [w for w in words[:-1] if not w.startswith("model=")]
    role = head[0] if head else "agent"
    text, detail = _agent_text(role, event, payload if isinstance(payload, dict) else {})
    if detail is None and text is None:
        detail = payload
    return LogEntry(ts=ts, source=source, kind=event, text=text or f"{role} {event}{_short(payload)}",
                    detail=_pretty(detail), detail_kind="json" if detail is not None else None)  # fmt: skip


def plain(entries: list[LogEntry], *, details: Literal["text", "all", "none"] = "text") -> str:
    """Entries as terminal lines: `HH:MM:SS.mmm  kind  text`, with text details (a test run's output) indented
    below; JSON details (tool arguments) only with `details="all"`."""
    out = []
    for e in entries:
        out.append(f"{_clock(e.ts):<12}  {e.kind:<13} {e.text}")
        if e.detail and (details == "all" or (details == "text" and e.detail_kind == "text")):
            out += [f"{'':14}{line}" for line in e.detail.splitlines()]
    return "\n".join(out) + ("\n" if out else "")


# -- helpers -------------------------------------------------------------------------------------------------


def _time(raw: str) -> tuple[str | None, str]:
    first, _, rest = raw.partition(" ")
    try:
        datetime.fromisoformat(first.replace("Z", "+00:00"))
    except ValueError:
        return None, raw
    return first, rest


def _split_payload(rest: str) -> tuple[list[str], Any]:
    """The words before the trailing JSON object, and the object (None when the line carries none)."""
    start = rest.find(" {")
    if start < 0:
        return rest.split(), None
    try:
        payload, end = json.JSONDecoder().raw_decode(rest, start + 1)
    except ValueError:
        return rest.split(), None
    if rest[end:].strip():
        return rest.split(), None
    return rest[:start].split(), payload


def _agent_text(role: str, event: str, p: dict) -> tuple[str | None, Any]:
    """(the sentence, what to keep collapsed) for the agent events people read most."""
    if event == "tool_call":
        args = p.get("args") if isinstance(p.get("args"), dict) else {}
        inner = ", ".join(f"{k}={_value(v)}" for k, v in args.items())
        return f"{role} calls {p.get('tool', '?')}({inner})", args or None
    if event == "tool_result":
        ok = p.get("ok")
        state = "ok" if ok else f"failed: {_value(p.get('error') or p.get('content'))}" if ok is False else "done"
        return f"{role} ← {p.get('tool', '?')}: {state}", p.get("content")
    if event == "usage":
        cost = p.get("cost_usd") or 0
        return (f"{role} used {_num(p.get('input_tokens'))} in + {_num(p.get('output_tokens'))} out tokens "
                f"({p.get('model', '?')}, ${cost:.4f})"), p  # fmt: skip
    if event == "turn_start":
        tools = p.get("tools") or []
        return f"{role} turn starts (attempt {p.get('attempt', '?')}, {len(tools)} tools)", p
    if event == "turn_end":
        output = p.get("output") if isinstance(p.get("output"), dict) else {}
        summary = f": {output['summary']}" if output.get("summary") else ""
        return f"{role} turn ends ({p.get('stop_reason', '?')}){summary}", p
    if event == "playbook_turn":
        return f"{role} replays the scripted turn {p.get('turn', '?')!r}", p
    return None, None


def _value(v: Any) -> str:
    text = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
    if len(text) <= SHORT_VALUE_CHARS and "\n" not in text:
        return json.dumps(text, ensure_ascii=False) if isinstance(v, str) else text
    lines = text.count("\n") + 1
    return f"<{len(text):,} chars{f', {lines} lines' if lines > 1 else ''}>"


def _short(payload: Any) -> str:
    if not isinstance(payload, dict):
        return ""
    return ": " + ", ".join(f"{k}={_value(v)}" for k, v in list(payload.items())[:4])


def _pretty(detail: Any) -> str | None:
    if detail is None:
        return None
    return detail if isinstance(detail, str) else json.dumps(detail, indent=2, ensure_ascii=False)


def _num(v: Any) -> str:
    return f"{v:,}" if isinstance(v, int) else "?"


def _clock(ts: str | None) -> str:
    if ts is None:
        return ""
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).strftime("%H:%M:%S.%f")[:12]
    except ValueError:
        return ts
