"""The anthropic backend: the Messages API tool-use loop with the `anthropic` SDK.

* the skill is the system prompt, marked for prompt caching, as are the tool
  definitions and the conversation so far (three cache breakpoints);
* tool calls run through the sandboxed tool registry; results (and errors) are
  fed back as `tool_result` blocks;
* the structured output arrives through a `submit_output` tool whose schema is
  the role's pydantic model (a bare JSON answer is accepted too); an invalid one
  is returned to the model as a tool error;
* every call is preceded by the budget pre-flight and followed by one usage record;
* 429 / 529 / 5xx / connection errors are retried with backoff honouring
  `retry-after`; after the last retry (or on any other API error) the turn fails
  with a clear EXECUTOR_ERROR. The SDK's own retries are off, so this is the one
  retry policy;
* `probe(model)` is the cheap check of REQ-14's usage-limit wait: one request
  with `max_tokens=1`; False while the API answers 429 / 529 / 5xx.
"""

from __future__ import annotations

import copy
import json
import random
import time
from typing import Any

import anthropic

from ..errors import ErrorCode, GraphLemonError, invalid_param
from ..models import ExecutorName
from .budget import estimate_tokens, preflight
from .context import KEEP_RECENT_RESULTS, Conversation, countdown
from .executor_seam import AgentRequest, AgentResult, ToolError
from .prompt import SUBMIT_TOOL, output_schema, render
from .settings import AgentSettings
from .tool_context import ToolContext
from .tools import call_tool, tool_specs
from .turn import TurnRecorder, json_in_text

RETRYABLE_STATUS = frozenset({408, 409, 429})
CACHE = {"type": "ephemeral"}
PROMPT_TOO_LONG_RETRIES = 2


class PromptTooLong(Exception):
    """The API's 400 'prompt is too long': the conversation is trimmed and the call sent again."""


class AnthropicExecutor:
    name: ExecutorName = "anthropic"

    def __init__(self, settings: AgentSettings, client: anthropic.Anthropic | None = None) -> None:
        if settings.api_key is None or not settings.api_key.get_secret_value().strip():
            raise invalid_param(
                "the anthropic executor needs an API key (ANTHROPIC_API_KEY or the AnthropicCredentials block)"
            )
        self.settings = settings
        key = settings.api_key.get_secret_value()
        self.secrets = (key,)
        self.client = client or anthropic.Anthropic(
            api_key=key, base_url=settings.base_url, max_retries=0, timeout=settings.request_timeout_s
        )

    # -- the turn ----------------------------------------------------------------------------
    def run(self, request: AgentRequest, ctx: ToolContext) -> AgentResult:
        rec = TurnRecorder(self.name, request, ctx)
        model = request.model or self.settings.model_for(request.role)
        rendered = render(request, "anthropic")
        tools = _with_cache_mark(tool_specs(request.tools) + [_submit_spec(request)])
        system = [{"type": "text", "text": block, "cache_control": CACHE} for block in rendered.system]
        convo = Conversation(rendered.first_message)
        fixed_tokens = estimate_tokens(rendered.system_text) + estimate_tokens(json.dumps(tools))
        problem: str | None = None
        limit = request.limits.max_turns
        for turn in range(limit):
            remaining = request.limits.timeout_s - rec.elapsed()
            if remaining <= 0:
                return rec.finish("timeout", output_error=problem)
            response = self._call(convo, rec, ctx, model=model, system=system, tools=tools, fixed=fixed_tokens,
                                  deadline=time.monotonic() + remaining)  # fmt: skip
            rec.turns += 1
            content = ctx.redactor.value(
                [block.model_dump(mode="json", exclude_none=True) for block in response.content]
            )
            rec.event("response", stop_reason=response.stop_reason, content=content)
            convo.add("assistant", content or [{"type": "text", "text": "(empty reply)"}])
            uses = [b for b in response.content if b.type == "tool_use"]
            if response.stop_reason == "refusal":
                return rec.finish("output_invalid", output_error="the model refused to continue (stop_reason=refusal)")
            left = limit - turn - 1
            if not uses:
                text = "".join(b.text for b in response.content if b.type == "text")
                answer = json_in_text(text)
                if not isinstance(answer, dict) and request.output_model is None and text.strip():
                    answer = {"text": text}  # no schema asked for: a plain answer is the output
                output, problem = rec.validate_output(answer)
                if problem is None:
                    return rec.finish("completed", output=output)
                convo.add("user", _text_only_note(response.stop_reason, problem, self.settings.max_output_tokens)
                          + countdown(left))  # fmt: skip
                continue
            cut = uses[-1] if response.stop_reason == "max_tokens" else None
            results, output = [], None
            for use in uses:
                if use is cut:  # its arguments may be incomplete: never run half a call
                    results.append(_tool_result(use.id, _cut_note(self.settings.max_output_tokens), True))
                    rec.event("tool_skipped", tool=use.name, tool_use_id=use.id, why="max_tokens")
                    continue
                result, accepted, problem = self._run_tool(use, request, ctx, rec)
                results.append(result)
                output = accepted if accepted is not None else output
            if output is not None:
                return rec.finish("completed", output=output)
            note = countdown(left)
            convo.add("user", results + ([{"type": "text", "text": note.strip()}] if note else []))
        return rec.finish("max_turns", output_error=problem or f"no output was submitted within {limit} model calls")

    def _call(self, convo: Conversation, rec: TurnRecorder, ctx: ToolContext, *, model: str, system, tools,
              fixed: int, deadline: float) -> Any:  # fmt: skip
        """One model call; a 'prompt is too long' answer clears old tool results and is sent again (twice at most)."""
        trim = 0
        while True:
            cleared = convo.clear_old(keep=KEEP_RECENT_RESULTS if trim == 0 else max(0, 2 - trim))
            if cleared:
                rec.event("context_cleared", tool_results=cleared)
            estimate = fixed + estimate_tokens(json.dumps(convo.messages, ensure_ascii=False))
            max_tokens = preflight(
                ctx.ledger,
                rec.request.task_id,
                model=model,
                input_tokens=estimate,
                max_output_tokens=self.settings.max_output_tokens,
            )
            params = {"model": model, "max_tokens": max_tokens, "system": system, "tools": tools,
                      "messages": _cache_last(convo.messages)}  # fmt: skip
            rec.event("request", model=model, max_tokens=max_tokens, estimate_input_tokens=estimate,
                      messages=len(convo.messages))  # fmt: skip
            try:
                return self._create(params, rec, deadline=deadline)
            except PromptTooLong as exc:
                if trim >= PROMPT_TOO_LONG_RETRIES or not convo.can_clear():
                    raise self._error(f"anthropic API error: {exc} (clearing old tool results did not make it fit)",
                                      status=400) from None  # fmt: skip
                trim += 1
                convo.force_clear = True

    def _run_tool(self, use: Any, request: AgentRequest, ctx: ToolContext, rec: TurnRecorder):
        """-> (tool_result block, accepted output or None, problem or None)."""
        rec.event("tool_call", tool=use.name, tool_use_id=use.id, args=use.input)
        if use.name == SUBMIT_TOOL:
            output, problem = rec.validate_output(use.input)
            text = "accepted" if problem is None else f"error[OUTPUT_INVALID]: {problem}"
            if problem is not None:
                ctx.tool_errors.append(ToolError(tool=SUBMIT_TOOL, code="OUTPUT_INVALID", message=problem))
            rec.event("tool_result", tool=use.name, ok=problem is None, content=text)
            return _tool_result(use.id, text, problem is not None), output, problem
        outcome = call_tool(ctx, use.name, use.input, allowed=request.tools)
        rec.event("tool_result", tool=use.name, ok=outcome.ok, content=outcome.content)
        return _tool_result(use.id, outcome.as_text(), not outcome.ok), None, None

    def probe(self, model: str) -> bool:
        """True when a minimal request on `model` is answered; False while the API is rate-limited or overloaded."""
        try:
            self.client.messages.create(
                model=model, max_tokens=1, messages=[{"role": "user", "content": "ok"}],
                timeout=min(self.settings.request_timeout_s, 60.0),
            )  # fmt: skip
        except anthropic.APIStatusError as exc:
            if exc.status_code in RETRYABLE_STATUS or exc.status_code >= 500:
                return False
            raise self._error(f"anthropic quota probe: {_describe(exc)}", status=exc.status_code) from None
        except anthropic.APIConnectionError:
            return False
        return True

    # -- one API call, with retries ------------------------------------------------------------
    def _create(self, params: dict[str, Any], rec: TurnRecorder, *, deadline: float) -> Any:
        attempts = self.settings.retry_max + 1
        last = ""
        for attempt in range(attempts):
            started = time.monotonic()
            try:
                response = self.client.messages.create(
                    **params, timeout=max(1.0, min(self.settings.request_timeout_s, deadline - started))
                )
            except anthropic.APIStatusError as exc:
                last = _describe(exc)
                if exc.status_code == 400 and "prompt is too long" in last.lower():
                    raise PromptTooLong(last) from None
                if exc.status_code not in RETRYABLE_STATUS and exc.status_code < 500:
                    raise self._error(f"anthropic API error: {last}", status=exc.status_code) from None
                wait = self._delay(attempt, exc.response.headers)
            except anthropic.APIConnectionError as exc:
                last = f"{type(exc).__name__}: {exc}"
                wait = self._delay(attempt, {})
            else:
                self._record(rec, params["model"], response, started)
                return response
            if attempt + 1 >= attempts:
                break
            if time.monotonic() + wait > deadline:
                raise self._error(f"anthropic: the turn timeout leaves no time to retry after: {last}")
            rec.event("retry", attempt=attempt + 1, wait_s=round(wait, 3), error=last)
            time.sleep(wait)
        raise self._error(f"anthropic: giving up after {attempts} attempt(s); last error: {last}", attempts=attempts)

    def _delay(self, attempt: int, headers: Any) -> float:
        """retry-after (seconds, or retry-after-ms) when the server sends it, else exponential backoff with jitter."""
        s = self.settings
        for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
            raw = headers.get(name) if headers else None
            try:
                if raw is not None:
                    return min(max(float(raw) * scale, 0.0), s.retry_max_delay_s)
            except ValueError:
                continue
        return min(s.retry_base_delay_s * (2**attempt) * (1 + random.random() / 4), s.retry_max_delay_s)

    def _record(self, rec: TurnRecorder, model: str, response: Any, started: float) -> None:
        u = response.usage
        rec.record_usage(
            model=response.model or model,
            input_tokens=u.input_tokens or 0,
            output_tokens=u.output_tokens or 0,
            cache_read_tokens=u.cache_read_input_tokens or 0,
            cache_write_tokens=u.cache_creation_input_tokens or 0,
            latency_ms=int((time.monotonic() - started) * 1000),
            stop_reason=response.stop_reason,
        )

    def _error(self, message: str, **context: Any) -> GraphLemonError:
        return GraphLemonError(ErrorCode.EXECUTOR_ERROR, message[:2000], executor="anthropic", **context)


# -- message helpers ---------------------------------------------------------------------------


def _submit_spec(request: AgentRequest) -> dict[str, Any]:
    return {
        "name": SUBMIT_TOOL,
        "description": (
            "Submit the final structured output of this turn; the turn ends when it is accepted. Call it once, "
            "when the work is done and checked, with an object matching the schema (the OUTPUT section of the "
            "system prompt explains each field). An object that does not match comes back as an error naming "
            "the fields to fix; correct them and call it again."
        ),
        "input_schema": output_schema(request),
    }


def _with_cache_mark(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    tools = [dict(t) for t in tools]
    tools[-1]["cache_control"] = CACHE
    return tools


def _cache_last(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A copy whose last message's last block carries a cache breakpoint (the prefix is reused next call)."""
    out = copy.deepcopy(messages)
    last = out[-1]
    if isinstance(last["content"], str):
        last["content"] = [{"type": "text", "text": last["content"]}]
    last["content"][-1]["cache_control"] = CACHE
    return out


def _text_only_note(stop_reason: str | None, problem: str, max_output_tokens: int) -> str:
    if stop_reason == "max_tokens":
        return _cut_note(max_output_tokens)
    return (
        f"Your reply had no tool call and is not a valid final answer ({problem}). Nobody reads text in this "
        f"unattended run: continue the work with the tools, and when it is done call {SUBMIT_TOOL}."
    )


def _cut_note(max_output_tokens: int) -> str:
    return (
        f"Not run: your reply was cut at the output limit ({max_output_tokens} tokens) while this call was being "
        "written, so its arguments may be incomplete. Work in smaller steps: write a long file in parts (a first "
        "part with write_file, the rest with edit_file), or one file per call."
    )


def _tool_result(tool_use_id: str, text: str, is_error: bool) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id, "content": text or "(empty)"}
    if is_error:
        block["is_error"] = True
    return block


def _describe(exc: anthropic.APIStatusError) -> str:
    kind = getattr(exc, "type", None) or ""
    message = getattr(exc, "api_message", None) or exc.message
    return f"{exc.status_code} {kind}: {message}".replace("  ", " ")
