"""What every backend does around a turn: transcript, usage records, output validation, the result.

A `TurnRecorder` writes the transcript (`.graphlemon/logs/<node_exec_id>/...ndjson`,
one redacted JSON event a line), appends one `UsageRecord` per model call, and
builds the `AgentResult`.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .. import execlogs
from ..models import ExecutorName, TimelineEvent, UsageRecord, utcnow
from .executor_seam import MISBEHAVIOUR, AgentRequest, AgentResult, StopReason, UsageTotals
from .pricing import cost_usd
from .tool_context import ToolContext

EVENT_MAX_CHARS = 1_000_000  # one transcript line (a tool result, an answer)
EVENT_HEAD_CHARS = 20_000  # what a cut line keeps
TRANSCRIPT_MAX_CHARS = 20_000_000  # one turn's transcript
NODE_LOG_EVENT_CHARS = 1_500  # one event in the node's execution log (the transcript keeps it whole)


class TurnRecorder:
    def __init__(self, executor: ExecutorName, request: AgentRequest, ctx: ToolContext) -> None:
        self.executor, self.request, self.ctx = executor, request, ctx
        self.started = time.monotonic()
        self.usage = UsageTotals()
        self.turns = 0
        self.usage_warned = False
        self.model: str | None = None
        self.written, self.capped = 0, False
        self.node_log = execlogs.writer(ctx.state_dir, ctx.node_exec_id)
        folder = ctx.state_dir / "logs" / ctx.node_exec_id
        folder.mkdir(parents=True, exist_ok=True)
        name = f"{request.role}-a{request.attempt}-{executor}-{utcnow():%Y%m%dT%H%M%S}-{secrets.token_hex(2)}.ndjson"
        self.transcript: Path = folder / name
        self.event(
            "turn_start",
            role=request.role,
            unit_id=request.unit_id,
            attempt=request.attempt,
            tools=request.tools,
            skill_commit=request.skill_commit,
        )

    def event(self, kind: str, **data: Any) -> None:
        """One transcript line; a line over EVENT_MAX_CHARS keeps its head, and past TRANSCRIPT_MAX_CHARS the
        transcript says it was cut and takes no more lines (a runaway turn must not fill the disk)."""
        if self.capped:
            return
        ts = utcnow().isoformat()
        clean = self.ctx.redactor.value(_jsonable(data))
        self._node_log(kind, clean)
        text = json.dumps({"ts": ts, "event": kind, **clean}, ensure_ascii=False, default=str)
        if len(text) > EVENT_MAX_CHARS:
            text = json.dumps({"ts": ts, "event": kind, "truncated_chars": len(text), "head": text[:EVENT_HEAD_CHARS]},
                              ensure_ascii=False)  # fmt: skip
        if self.written + len(text) > TRANSCRIPT_MAX_CHARS:
            self.capped = True
            text = json.dumps({"ts": ts, "event": "transcript_capped", "after_chars": self.written})
        self.written += len(text) + 1
        with self.transcript.open("a", encoding="utf-8", errors="backslashreplace") as fh:  # a lone surrogate: escaped
            fh.write(text + "\n")

    def _node_log(self, kind: str, clean: dict[str, Any]) -> None:
        """The same event, trimmed, as one line of the node's execution log (REQ-13)."""
        if self.node_log is None:
            return
        summary = json.dumps(clean, ensure_ascii=False, default=str)
        if len(summary) > NODE_LOG_EVENT_CHARS:
            summary = f"{summary[:NODE_LOG_EVENT_CHARS]} … [{len(summary) - NODE_LOG_EVENT_CHARS} chars cut]"
        model = f" model={self.model}" if self.model else ""
        self.node_log.write("agent", f"{self.request.role} {self.executor}{model} {kind} {summary}")

    def record_usage(
        self,
        *,
        model: str,
        input_tokens: int = 0,
        output_tokens: int = 0,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
        latency_ms: int = 0,
        stop_reason: str | None = None,
    ) -> UsageRecord:
        self.model = model
        record = UsageRecord(
            call_id=f"call-{secrets.token_hex(6)}",
            task_id=self.request.task_id,
            node_exec_id=self.ctx.node_exec_id,
            stage=self.request.stage,
            unit_id=self.request.unit_id,
            role=self.request.role,
            model=model,
            executor=self.executor,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cache_read_tokens=cache_read_tokens,
            cache_write_tokens=cache_write_tokens,
            cost_usd=cost_usd(
                model,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                cache_read_tokens=cache_read_tokens,
                cache_write_tokens=cache_write_tokens,
            ),
            latency_ms=latency_ms,
            stop_reason=stop_reason,
            skill_commit=self.request.skill_commit,
        )
        self.ctx.ledger.append(record)
        self.usage.add(record)
        self.event("usage", **record.model_dump(mode="json", exclude={"kind", "schema_version", "ts"}))
        return record

    def usage_invalid(self, problem: str) -> None:
        """The server's usage for a reply was invalid: a transcript line each time, the person's timeline once a
        turn."""
        self.event("usage_invalid", why=problem)
        if self.usage_warned or not self.request.task_id:
            return
        self.usage_warned = True
        self.ctx.ledger.append(TimelineEvent(
            event="usage_invalid", task_id=self.request.task_id, unit_id=self.request.unit_id,
            ref=self.ctx.node_exec_id, summary=f"{self.request.role} attempt {self.request.attempt}: {problem}"[:1000],
        ))  # fmt: skip

    def validate_output(self, data: Any) -> tuple[dict[str, Any] | None, str | None]:
        """-> (output, None) or (None, a message saying what is wrong)."""
        if isinstance(data, str):
            return None, "the reply was empty" if not data.strip() else "the reply holds no JSON object"
        if not isinstance(data, dict):
            return None, f"the answer must be a JSON object, not a JSON {_json_kind(data)}"
        model = self.request.output_model
        if model is None:
            return data, None
        try:
            return model.model_validate(data).model_dump(mode="json"), None
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e.get('loc', ())) or '(root)'}: {e.get('msg')}" for e in exc.errors()[:5]
            )
            return None, f"the answer does not match its schema: {problems}"

    def finish(
        self,
        stop_reason: StopReason,
        *,
        output: dict[str, Any] | None = None,
        output_error: str | None = None,
        reverted_paths: list[str] | None = None,
        files_changed: set[str] | None = None,
    ) -> AgentResult:
        result = AgentResult(
            executor=self.executor,
            role=self.request.role,
            model=self.model,
            output=output if stop_reason == "completed" else None,
            output_error=output_error,
            stop_reason=stop_reason,
            files_changed=sorted(files_changed if files_changed is not None else self.ctx.files_changed),
            reverted_paths=sorted(reverted_paths or []),
            tool_errors=list(self.ctx.tool_errors),
            usage=self.usage,
            transcript_path=str(self.transcript),
            turns=self.turns,
            duration_ms=int((time.monotonic() - self.started) * 1000),
            task_id=self.request.task_id,
            node_exec_id=self.ctx.node_exec_id,
            unit_id=self.request.unit_id,
            attempt=self.request.attempt,
        )
        self.event(
            "turn_end",
            stop_reason=stop_reason,
            output=result.output,
            output_error=output_error,
            usage=self.usage.model_dump(),
        )
        if stop_reason in MISBEHAVIOUR and self.request.task_id:  # the person's timeline names what the model did
            self.ctx.ledger.append(TimelineEvent(
                event=f"turn_{stop_reason}", task_id=self.request.task_id, unit_id=self.request.unit_id,
                ref=self.ctx.node_exec_id, summary=self.ctx.redactor.text(stopped_summary(result))[:1000],
            ))  # fmt: skip
        return result

    def elapsed(self) -> float:
        return time.monotonic() - self.started


STOPPED = {
    "refused": "refused",
    "no_tool_use": "replied without calling a tool",
    "repeated_calls": "repeated the same call",
    "max_turns": "ran out of model calls",
    "timeout": "ran out of time",
    "output_invalid": "gave no valid answer",
}


def stopped_summary(result: AgentResult) -> str:
    """One line for a person: which turn stopped early, how, and why (`coder add attempt 2 refused: ...`)."""
    unit = f" {result.unit_id}" if result.unit_id else ""
    what = STOPPED.get(result.stop_reason, result.stop_reason)
    why = f": {result.output_error}" if result.output_error else ""
    return f"{result.role}{unit} attempt {result.attempt} {what} ({result.stop_reason}){why}"


def _json_kind(value: Any) -> str:
    return {list: "array", bool: "boolean", int: "number", float: "number", type(None): "null"}.get(type(value), "value")


def json_in_text(text: str) -> Any:
    """The JSON object in a final text answer (a ```json fence, or the outermost braces), else the text."""
    fence = re.search(r"```(?:json)?\s*(\{.*?\})\s*```", text, re.S)
    candidates = [fence.group(1)] if fence else []
    if "{" in text and "}" in text:
        candidates.append(text[text.index("{") : text.rindex("}") + 1])
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    return text


def _jsonable(data: Any) -> Any:
    if hasattr(data, "model_dump"):
        return data.model_dump(mode="json")
    if isinstance(data, dict):
        return {k: _jsonable(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [_jsonable(v) for v in data]
    return data
