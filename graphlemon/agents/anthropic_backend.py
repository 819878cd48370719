"""The anthropic backend: the Messages API tool-use loop with the `anthropic` SDK.

* the system blocks, the tool definitions and the conversation so far are marked for prompt
  caching (at most four breakpoints);
* tool calls run through the sandboxed tool registry; results (and errors) are fed back as
  `tool_result` blocks. A reply stopped for any reason other than `tool_use` / `end_turn` /
  `stop_sequence` (`max_tokens`, `model_context_window_exceeded`, any future one) may have cut its
  last call: that call is never run;
* the structured output arrives through a `submit_output` tool whose schema is the role's pydantic
  model (the one place the schema is sent; a bare JSON answer is accepted too); an invalid one is
  returned to the model as a tool error;
* what the API sent goes back as it came (thinking blocks and their signatures byte for byte), minus what
  the API itself refuses (agents/reply_blocks.py: empty text dropped, adjacent text joined, a tool_use with
  a missing or repeated id answered as an invalid call under an id GraphLemon assigns); only what
  GraphLemon writes down (transcript, ledger, logs) is redacted;
* misbehaviour is noticed and named (agents/misbehaviour.py): a refusal, replies without a tool
  call, the same call again end the attempt with that stop reason;
* the conversation stays within a context budget over every block (agents/context.py);
* every call is preceded by the budget pre-flight and followed by one usage record;
* 429 / 529 / 5xx / connection errors, an empty 200 and a cut-off JSON body are retried with
  backoff honouring `retry-after`; after the last retry, or on a reply no retry can fix (HTML from
  a proxy, JSON that is not a message, any other 4xx), the turn fails with `ExecutorGaveUp`
  (EXECUTOR_ERROR) quoting what answered (agents/api_reply.py). The SDK's own retries are off, so
  this is the one retry policy;
* `probe(model)` is the cheap check of REQ-14's usage-limit wait: one request
  with `max_tokens=1`; False while the API answers 429 / 529 / 5xx.
"""

from __future__ import annotations

import copy
import json
import random
import time
from dataclasses import dataclass, field
from typing import Any

import anthropic

from ..errors import ExecutorGaveUp, invalid_param
from ..models import ExecutorName
from ..redact import redact_library_logs
from .api_reply import ReplyProblem, describe_status_error, read_message
from .api_usage import read_usage
from .budget import estimate_tokens, preflight
from .context import KEEP_RECENT_REPLIES, KEEP_RECENT_RESULTS, Conversation, countdown
from .executor_seam import AgentRequest, AgentResult, ToolError
from .misbehaviour import Ending, RepeatedCalls, TextReplies
from .prompt import SUBMIT_TOOL, output_schema, render
from .reply_blocks import Call, ToolUseIds, normalise
from .settings import AgentSettings
from .tool_context import ToolContext
from .tools import call_tool, tool_specs
from .turn import TurnRecorder, json_in_text

RETRYABLE_STATUS = frozenset({408, 409, 429})
CACHE = {"type": "ephemeral"}
PROMPT_TOO_LONG_RETRIES = 2
SAFE_STOPS = frozenset({"tool_use", "end_turn", "stop_sequence"})  # the reply ended on its own: its calls are whole
CONTEXT_FULL = "model_context_window_exceeded"
SDK_LOGGERS = ("anthropic._base_client", "anthropic")  # the SDK logs each request's body at DEBUG


class PromptTooLong(Exception):
    """The API's 400 'prompt is too long': the conversation is trimmed and the call sent again."""


@dataclass(frozen=True)
class WirePrompt:
    """What every call of a turn starts with: the system blocks, the tool definitions, the first message."""

    system: list[str]
    tools: list[dict[str, Any]]
    first_message: str


def wire_prompt(request: AgentRequest) -> WirePrompt:
    rendered = render(request, "anthropic")
    return WirePrompt(rendered.system, tool_specs(request.tools) + [_submit_spec(request)], rendered.first_message)


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
        redact_library_logs(SDK_LOGGERS, self.secrets)  # requests go out as they came; their DEBUG log is masked
        self.client = client or anthropic.Anthropic(
            api_key=key, base_url=settings.base_url, max_retries=0, timeout=settings.request_timeout_s
        )

    # -- the turn ----------------------------------------------------------------------------
    def run(self, request: AgentRequest, ctx: ToolContext) -> AgentResult:
        rec = TurnRecorder(self.name, request, ctx)
        model = request.model or self.settings.model_for(request.role)
        prompt = wire_prompt(request)
        tools = _with_cache_mark(prompt.tools)
        system = [{"type": "text", "text": block, "cache_control": CACHE} for block in prompt.system]
        turn = _Turn(request, ctx, rec, Conversation(prompt.first_message), self.settings.max_output_tokens)
        fixed = estimate_tokens("\n\n".join(prompt.system)) + estimate_tokens(json.dumps(tools))
        limit = request.limits.max_turns
        for index in range(limit):
            remaining = request.limits.timeout_s - rec.elapsed()
            if remaining <= 0:
                return rec.finish("timeout", output_error=turn.problem)
            response = self._call(turn, model=model, system=system, tools=tools, fixed=fixed,
                                  deadline=time.monotonic() + remaining)  # fmt: skip
            rec.turns += 1
            done = turn.answer(response, left=limit - index - 1)
            if done is not None:
                return done
        return rec.finish("max_turns", output_error=turn.problem or f"no output was submitted within {limit} model calls")

    def _call(self, turn: _Turn, *, model: str, system, tools, fixed: int, deadline: float) -> Any:
        """One model call; a 'prompt is too long' answer trims the conversation and is sent again (twice at most)."""
        convo, rec = turn.convo, turn.rec
        trim = 0
        while True:
            keep = (KEEP_RECENT_RESULTS, KEEP_RECENT_REPLIES) if trim == 0 else (max(0, 2 - trim), max(0, 2 - trim))
            trimmed = convo.prepare(*keep)
            if trimmed:
                rec.event("context_cleared", tool_results=trimmed.tool_results, replies=trimmed.replies,
                          thinking=trimmed.thinking, conversation_chars=convo.size())  # fmt: skip
                if trimmed.tool_results or trimmed.thinking:
                    turn.repeats.context_trimmed()  # a result the model saw is gone: reading it again is no repeat
            estimate = fixed + estimate_tokens(json.dumps(convo.messages, ensure_ascii=False))
            max_tokens = preflight(
                turn.ctx.ledger,
                rec.request.task_id,
                model=model,
                input_tokens=estimate,
                max_output_tokens=self.settings.max_output_tokens,
            )
            params = {"model": model, "max_tokens": max_tokens, "system": system, "tools": tools,
                      "messages": _cache_last(convo.messages)}  # fmt: skip
            rec.event("request", model=model, max_tokens=max_tokens, estimate_input_tokens=estimate,
                      messages=len(convo.messages), conversation_chars=convo.size())  # fmt: skip
            try:
                return self._create(params, rec, deadline=deadline, estimate=estimate)
            except PromptTooLong as exc:
                if trim >= PROMPT_TOO_LONG_RETRIES or not convo.can_clear():
                    raise self._error(f"anthropic API error: {exc} (trimming the conversation did not make it fit)",
                                      status=400, attempts=trim + 1) from None  # fmt: skip
                trim += 1
                convo.force_clear = True

    def probe(self, model: str) -> bool:
        """True when a minimal request on `model` is answered; False while the API is rate-limited or overloaded
        (or a reply came back empty or cut off); EXECUTOR_ERROR for what waiting cannot fix (a bad key, HTML)."""
        try:
            raw = self.client.messages.with_raw_response.create(
                model=model, max_tokens=1, messages=[{"role": "user", "content": "ok"}],
                timeout=min(self.settings.request_timeout_s, 60.0),
            )  # fmt: skip
            read_message(raw)
        except anthropic.APIStatusError as exc:
            if exc.status_code in RETRYABLE_STATUS or exc.status_code >= 500:
                return False
            raise self._error(f"anthropic quota probe: {describe_status_error(exc)}", status=exc.status_code) from None
        except anthropic.APIConnectionError:
            return False
        except ReplyProblem as problem:
            if problem.transient:
                return False
            raise self._error(f"anthropic quota probe: {problem.message}") from None
        return True

    # -- one API call, with retries ------------------------------------------------------------
    def _create(self, params: dict[str, Any], rec: TurnRecorder, *, deadline: float, estimate: int = 0) -> Any:
        attempts = self.settings.retry_max + 1
        last = ""
        for attempt in range(attempts):
            started = time.monotonic()
            try:
                raw = self.client.messages.with_raw_response.create(
                    **params, timeout=max(1.0, min(self.settings.request_timeout_s, deadline - started))
                )
                response = read_message(raw)
            except anthropic.APIStatusError as exc:
                last = describe_status_error(exc)
                if exc.status_code == 400 and "prompt is too long" in last.lower():
                    raise PromptTooLong(last) from None
                if exc.status_code not in RETRYABLE_STATUS and exc.status_code < 500:
                    raise self._error(f"anthropic API error: {last}", status=exc.status_code, attempts=attempt + 1) from None
                wait = self._delay(attempt, exc.response.headers)
            except anthropic.APIConnectionError as exc:
                last = f"{type(exc).__name__}: {exc}"
                wait = self._delay(attempt, {})
            except ReplyProblem as problem:
                last = problem.message
                if not problem.transient:
                    raise self._error(f"anthropic: {last}", attempts=attempt + 1) from None
                wait = self._delay(attempt, {})
            else:
                self._record(rec, params["model"], response, started, estimate)
                return response
            if attempt + 1 >= attempts:
                break
            if time.monotonic() + wait > deadline:
                raise self._error(f"anthropic: the turn timeout leaves no time to retry after: {last}",
                                  attempts=attempt + 1)  # fmt: skip
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

    def _record(self, rec: TurnRecorder, model: str, response: Any, started: float, estimate: int) -> None:
        """One usage record; a usage the server got wrong is recorded as GraphLemon's estimate, said so
        (agents/api_usage.py)."""
        content = [b.model_dump(mode="json") for b in response.content or [] if hasattr(b, "model_dump")]
        usage = read_usage(getattr(response, "usage", None), input_estimate=estimate,
                           output_estimate=estimate_tokens(json.dumps(content, ensure_ascii=False)))  # fmt: skip
        if usage.problem is not None:
            rec.usage_invalid(usage.problem)
        rec.record_usage(
            model=getattr(response, "model", None) or model,
            **usage.tokens,
            latency_ms=int((time.monotonic() - started) * 1000),
            stop_reason=getattr(response, "stop_reason", None),
        )

    def _error(self, message: str, **context: Any) -> ExecutorGaveUp:
        return ExecutorGaveUp(message[:2000], executor="anthropic", **context)


@dataclass
class _Turn:
    """One turn's conversation and what the model has done in it so far."""

    request: AgentRequest
    ctx: ToolContext
    rec: TurnRecorder
    convo: Conversation
    max_output_tokens: int
    problem: str | None = None  # why the last answer was not accepted
    texts: TextReplies = field(default_factory=TextReplies)
    repeats: RepeatedCalls = field(default_factory=RepeatedCalls)
    ids: ToolUseIds = field(default_factory=ToolUseIds)

    def answer(self, response: Any, *, left: int) -> AgentResult | None:
        """Handle one reply -> the turn's result when it ends here, else None (the next call follows)."""
        came = [block.model_dump(mode="json", exclude_none=True) for block in response.content or []]
        stop = getattr(response, "stop_reason", None)
        self.rec.event("response", stop_reason=stop, content=came)  # redacted in the transcript only
        reply = normalise(came, self.ids)  # as it came, minus what the API refuses (reply_blocks.py)
        if reply.fixes:
            self.rec.event("reply_normalised", **reply.fixes)
        self.convo.add("assistant", reply.content or [{"type": "text", "text": "(empty reply)"}])
        if stop == "refusal":
            return self._end(Ending("refused", "the API stopped the reply with stop_reason 'refusal'"))
        uses = reply.calls
        if not uses:
            return self._text_reply(response, stop, left)
        self.texts.tool_called()
        self.problem = None  # an earlier text reply's problem is stale now
        cut = uses[-1] if stop not in SAFE_STOPS else None
        if stop == CONTEXT_FULL:
            self.convo.force_clear = True  # the next request must be smaller
        results, output = [], None
        for use in uses:
            if use is cut:  # its arguments may be incomplete: never run half a call
                results.append(_tool_result(use.id, self._cut_note(stop), True))
                self.rec.event("tool_skipped", tool=use.name, tool_use_id=use.id, why=stop)
                continue
            result, accepted = self._run_tool(use)
            results.append(result)
            output = accepted if accepted is not None else output
        if output is not None:
            return self.rec.finish("completed", output=output)
        ending = self.repeats.ending()
        if ending is not None:
            return self._end(ending)
        note = countdown(left)
        self.convo.add("user", results + ([{"type": "text", "text": note.strip()}] if note else []))
        return None

    def _text_reply(self, response: Any, stop: str | None, left: int) -> AgentResult | None:
        text = "".join(getattr(b, "text", "") for b in response.content or [] if getattr(b, "type", None) == "text")
        answer = json_in_text(text)
        if not isinstance(answer, dict) and self.request.output_model is None and text.strip():
            answer = {"text": text}  # no schema asked for: a plain answer is the output
        output, self.problem = self.rec.validate_output(answer)
        if self.problem is None:
            return self.rec.finish("completed", output=output)
        ending = self.texts.after(text)
        if ending is not None:
            return self._end(ending)
        cut = self._cut_note(stop) + "\n\n" if stop not in SAFE_STOPS and stop is not None else ""
        self.convo.add("user", cut + self.texts.note(self.problem, SUBMIT_TOOL) + countdown(left))
        return None

    def _run_tool(self, use: Call) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """-> (tool_result block, the accepted output or None)."""
        ctx, rec = self.ctx, self.rec
        rec.event("tool_call", tool=use.name, tool_use_id=use.id, args=use.input)
        if use.problem is not None:  # a malformed call: answered, never run
            ctx.tool_errors.append(ToolError(tool=use.name, code="INVALID_PARAM", message=use.problem))
            rec.event("tool_result", tool=use.name, ok=False, content=use.problem)
            return _tool_result(use.id, use.problem, True), None
        repeat = self.repeats.check(use.name, use.input)
        if repeat is not None:
            rec.event("tool_repeated", tool=use.name, tool_use_id=use.id, repeats=self.repeats.repeats)
            return _tool_result(use.id, repeat[0], repeat[1]), None
        if use.name == SUBMIT_TOOL:
            output, problem = rec.validate_output(use.input)
            text = "accepted" if problem is None else f"error[OUTPUT_INVALID]: {problem}"
            if problem is not None:
                self.problem = problem
                ctx.tool_errors.append(ToolError(tool=SUBMIT_TOOL, code="OUTPUT_INVALID", message=problem))
                self.repeats.record(use.name, use.input, ok=False, text=text)
            rec.event("tool_result", tool=use.name, ok=problem is None, content=text)
            return _tool_result(use.id, text, problem is not None), output
        available = [*self.request.tools, SUBMIT_TOOL]
        if use.name not in available:
            text = f"error[INVALID_PARAM]: there is no tool {use.name!r} in this turn; the tools are: {', '.join(available)}"
            ctx.tool_errors.append(ToolError(tool=str(use.name), code="INVALID_PARAM", message=text))
            self.repeats.record(use.name, use.input, ok=False, text=text)
            rec.event("tool_result", tool=use.name, ok=False, content=text)
            return _tool_result(use.id, text, True), None
        outcome = call_tool(ctx, use.name, use.input, allowed=self.request.tools)
        text = outcome.as_text()
        self.repeats.record(use.name, use.input, ok=outcome.ok, text=text)
        rec.event("tool_result", tool=use.name, ok=outcome.ok, content=outcome.content)
        return _tool_result(use.id, text, not outcome.ok), None

    def _end(self, ending: Ending) -> AgentResult:
        return self.rec.finish(ending.stop_reason, output_error=ending.why)  # type: ignore[arg-type]

    def _cut_note(self, stop: str | None) -> str:
        writes = {"write_file", "edit_file"} <= set(self.request.tools)
        smaller = (" Work in smaller steps: write a long file in parts (a first part with write_file, the rest with "
                   "edit_file), or one file per call." if writes else " Work in smaller steps.")  # fmt: skip
        if stop == "max_tokens":
            why = f"your reply was cut at the output limit ({self.max_output_tokens} tokens)"
        elif stop == CONTEXT_FULL:
            why = "your reply was cut: the conversation filled the model's context window (older parts are now trimmed)"
        else:
            why = f"your reply ended with stop reason {stop!r}, which may have cut it"
        return f"Not run: {why} while this call was being written, so its arguments may be incomplete.{smaller}"


# -- message helpers ---------------------------------------------------------------------------


def _submit_spec(request: AgentRequest) -> dict[str, Any]:
    return {
        "name": SUBMIT_TOOL,
        "description": (
            "Submit your final answer, once the work is done and checked: the turn ends when it is accepted. An answer "
            "that does not match this schema comes back as an error naming the fields to fix."
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


def _tool_result(tool_use_id: str, text: str, is_error: bool) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id, "content": text or "(empty)"}
    if is_error:
        block["is_error"] = True
    return block
