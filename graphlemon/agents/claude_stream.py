"""One `claude -p --output-format stream-json` process: feed the prompt, read events, judge the result.

Usage is recorded per assistant message id; a rejected `rate_limit_event` or a
usage-limit message becomes `QuotaExceeded`; classifier denials go to the
`ClassifierGuard`; a token budget crossed mid-stream stops the process; Claude
Code's `TodoWrite` list becomes the role's todo list (what `write_todolist`
writes for the other backends, read by the tester's self-check).

What `claude` prints is bounded before it is believed: a line longer than MAX_LINE characters is read in pieces
and dropped (recorded as `claude_unparsed` with its head and length, never held whole), stderr keeps a bounded
tail, and an event nested deeper than MAX_DEPTH (or one JSON cannot decode) is not an event.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from ..errors import BudgetExceeded, ErrorCode, GraphLemonError
from ..testrun.process import tracked
from ..testrun.sandbox_end import end_run
from .automode_denials import ClassifierGuard, is_classifier_denial
from .budget import budget_status
from .executor_seam import AgentRequest, AgentResult
from .tool_context import ToolContext
from .tools.state import TodoItem, save_todolist
from .turn import TurnRecorder, json_in_text
from .usage_limit_signals import QuotaHit, from_rate_limit_event, merge_quota, parse_usage_limit

MAX_LINE = 8 * 1024 * 1024  # characters of one stream-json line; a longer one is dropped as it is read
MAX_DEPTH = 64  # how deeply an event may nest its objects and lists
CLAUDE_TODO_STATUS = {"pending": "pending", "in_progress": "in_progress", "completed": "done"}


class ClaudeStream:
    """One `claude` process: feed the prompt, read stream-json events until the result or the deadline."""

    def __init__(
        self,
        request: AgentRequest,
        ctx: ToolContext,
        rec: TurnRecorder,
        guard: ClassifierGuard,
        model: str,
    ) -> None:
        self.request, self.ctx, self.rec, self.guard, self.model = (
            request,
            ctx,
            rec,
            guard,
            model,
        )
        self.result: dict[str, Any] | None = None
        self.quota_event: QuotaHit | None = None  # from a rejected rate_limit_event
        self.quota_text: QuotaHit | None = None  # from a usage-limit message
        self.timed_out = False
        self.exit_code: int | None = None
        self.stderr_tail: list[str] = []
        self.tool_names: dict[str, str] = {}
        self.refused = False  # an assistant message stopped with stop_reason "refusal"
        self._pending_usage: dict[str, dict[str, Any]] = {}
        self._last_event = time.monotonic()

    # -- process ------------------------------------------------------------------------------
    def run(self, argv: list[str], env: dict[str, str] | None = None, status: Path | None = None) -> None:
        """Run `argv` (the sandbox's command line) with `env` (None: this process's environment); `status` is where
        bwrap reports the sandbox's init. However the turn ends, every process it started has ended when this
        returns (`end_turn_processes`), or it raises."""
        self.rec.event(
            "launch", argv=[a if len(a) < 200 else a[:200] + "..." for a in argv], cwd=str(self.request.workdir)
        )
        try:
            proc = subprocess.Popen(
                argv,
                cwd=self.request.workdir,
                env=env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                encoding="utf-8",
                errors="replace",
                start_new_session=True,
            )
        except OSError as exc:
            raise GraphLemonError(
                ErrorCode.EXECUTOR_ERROR, f"cannot start {argv[0]!r}: {exc}", executor="claude_code"
            ) from None
        with tracked(proc):  # ended with the others if GraphLemon exits during the turn
            self._follow(proc, status)

    def _follow(self, proc: subprocess.Popen, status: Path | None) -> None:
        lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True).start()
        threading.Thread(target=_tail, args=(proc.stderr, self.stderr_tail), daemon=True).start()
        try:
            proc.stdin.write(self.request.prompt)  # type: ignore[union-attr]
            proc.stdin.close()  # type: ignore[union-attr]
        except BrokenPipeError:
            pass
        deadline = time.monotonic() + self.request.limits.timeout_s
        try:
            while True:
                try:
                    line = lines.get(timeout=max(0.01, deadline - time.monotonic()))
                except queue.Empty:
                    self.timed_out = True
                    break
                if line is None:
                    break
                self.handle_line(line)
        finally:
            end_turn_processes(proc, status, self.rec)
            self.exit_code = proc.returncode
            self.rec.event(
                "exit",
                exit_code=self.exit_code,
                timed_out=self.timed_out,
                stderr_tail="".join(self.stderr_tail)[-2000:],
            )

    # -- events -------------------------------------------------------------------------------
    def handle_line(self, line: str) -> None:
        line = line.strip()
        if not line:
            return
        if line.startswith(TOO_LONG):
            self.rec.event("claude_unparsed", line=line[:2000], why="longer than the stream's line limit")
            return
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):
            self.rec.event("claude_unparsed", line=line[:2000])
            return
        if not isinstance(event, dict):
            return
        if _deeper_than(event, MAX_DEPTH):
            self.rec.event("claude_unparsed", line=line[:2000], why=f"nested deeper than {MAX_DEPTH}")
            return
        self.rec.event("claude", data=event)
        kind = event.get("type")
        if kind == "assistant":
            self.on_assistant(event)
        elif kind == "user":
            self.on_user(event)
        elif kind == "rate_limit_event":
            self.quota_event = self.quota_event or from_rate_limit_event(event)
        elif kind == "result":
            self.result = event

    def on_assistant(self, event: dict[str, Any]) -> None:
        message = event.get("message") or {}
        self.refused = self.refused or message.get("stop_reason") == "refusal"
        msg_id = message.get("id") or f"anon-{len(self._pending_usage)}"
        if message.get("usage") and message.get("model") != "<synthetic>":
            if msg_id not in self._pending_usage:
                self.flush_usage()
            self._pending_usage[msg_id] = {
                "usage": message["usage"],
                "model": message.get("model") or self.model,
                "at": time.monotonic(),
            }
            self._check_token_budget()
        for block in message.get("content") or []:
            if block.get("type") == "tool_use":
                self.tool_names[block.get("id", "")] = block.get("name", "?")
                if block.get("name") == "TodoWrite":
                    self.on_todos(block.get("input") or {})
            elif block.get("type") == "text" and (message.get("model") == "<synthetic>" or event.get("error")):
                self.quota_text = self.quota_text or parse_usage_limit(block.get("text", ""))

    def on_user(self, event: dict[str, Any]) -> None:
        content = (event.get("message") or {}).get("content") or []
        for block in content if isinstance(content, list) else []:
            if block.get("type") != "tool_result":
                continue
            text = _block_text(block.get("content"))
            tool = self.tool_names.get(block.get("tool_use_id", ""), "?")
            if block.get("is_error") and is_classifier_denial(text):
                self.guard.denied(tool, text, ref=block.get("tool_use_id"))  # may raise ClassifierBlocked
            elif not block.get("is_error"):
                self.guard.allowed()

    def on_todos(self, data: dict[str, Any]) -> None:
        try:
            items = [
                TodoItem(title=str(t.get("content") or t.get("activeForm") or "?")[:500],
                         status=CLAUDE_TODO_STATUS.get(str(t.get("status")), "pending"))
                for t in data.get("todos") or []
            ]  # fmt: skip
        except (AttributeError, ValueError) as exc:
            self.rec.event("todo_unreadable", error=str(exc)[:500])
            return
        if items:
            save_todolist(self.ctx, items)

    def flush_usage(self) -> None:
        for msg_id, item in list(self._pending_usage.items()):
            u = item["usage"]
            self.rec.turns += 1
            self.rec.record_usage(
                model=item["model"],
                input_tokens=int(u.get("input_tokens") or 0),
                output_tokens=int(u.get("output_tokens") or 0),
                cache_read_tokens=int(u.get("cache_read_input_tokens") or 0),
                cache_write_tokens=int(u.get("cache_creation_input_tokens") or 0),
                latency_ms=int((item["at"] - self._last_event) * 1000),
                stop_reason=u.get("stop_reason"),
            )
            self._last_event = item["at"]
            del self._pending_usage[msg_id]

    def _check_token_budget(self) -> None:
        """Token budgets cannot be passed to claude: stop the turn once the recorded usage crosses one."""
        status = budget_status(self.ctx.ledger, self.request.task_id)
        if status is None or status.limit_type != "token_count":
            return
        pending = sum(
            sum(int(v or 0) for k, v in i["usage"].items() if k.endswith("tokens"))
            for i in self._pending_usage.values()
        )
        if status.used + pending > status.limit_value:
            raise BudgetExceeded(
                f"task {self.request.task_id}: the claude turn crossed the token budget {status.limit_value:g}; it was stopped",
                task_id=self.request.task_id,
                limit_type=status.limit_type,
                limit_value=status.limit_value,
                used=status.used + pending,
            )

    # -- the result ---------------------------------------------------------------------------
    def outcome(self, *, files_changed: set[str], reverted: list[str]) -> AgentResult:
        result = self.result or {}
        text = str(result.get("result") or "")
        if self.quota_text is None and (result.get("is_error") or len(text) < 300):
            self.quota_text = parse_usage_limit(text)
        hit = merge_quota(self.quota_event, self.quota_text)
        if hit is not None:
            raise hit.error()
        kept = files_changed - set(reverted)
        if self.timed_out:
            return self.rec.finish(
                "timeout",
                output_error=f"claude did not finish within {self.request.limits.timeout_s:g}s",
                files_changed=kept,
                reverted_paths=reverted,
            )
        if not self.result:
            tail = "".join(self.stderr_tail)[-1500:].strip()
            raise GraphLemonError(
                ErrorCode.EXECUTOR_ERROR,
                f"claude exited with code {self.exit_code} without a result event" + (f": {tail}" if tail else ""),
                executor="claude_code",
            )
        if result.get("subtype") == "error_max_turns":
            return self.rec.finish(
                "max_turns", output_error="claude reached --max-turns", files_changed=kept, reverted_paths=reverted
            )
        if result.get("is_error"):
            raise GraphLemonError(
                ErrorCode.EXECUTOR_ERROR,
                f"claude reported an error ({result.get('subtype')}): {text[:1500]}",
                executor="claude_code",
            )
        data = result.get("structured_output")
        if data is None and self.refused:
            return self.rec.finish("refused", output_error="the API stopped a reply with stop_reason 'refusal'",
                                   files_changed=kept, reverted_paths=reverted)  # fmt: skip
        if data is None:
            data = json_in_text(text)
            if not isinstance(data, dict) and self.request.output_model is None:
                data = {"text": text}
        output, problem = self.rec.validate_output(data)
        if problem:
            return self.rec.finish("output_invalid", output_error=problem, files_changed=kept, reverted_paths=reverted)
        return self.rec.finish("completed", output=output, files_changed=kept, reverted_paths=reverted)


def _block_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
    return ""


TOO_LONG = "\0graphlemon: line too long\0"  # what `_pump` passes on for a line it dropped (no JSON starts so)


def _bounded_lines(stream, limit: int):
    """The stream's lines, each at most `limit` characters: a longer one is read on to its end in pieces of `limit`
    and comes out as TOO_LONG, its head and its length (memory stays bounded whatever the process prints)."""
    for piece in iter(lambda: stream.readline(limit), ""):
        if len(piece) < limit or piece.endswith("\n"):
            yield piece
            continue
        head, length = piece[:200], len(piece)
        for rest in iter(lambda: stream.readline(limit), ""):
            length += len(rest)
            if rest.endswith("\n"):
                break
        yield f"{TOO_LONG} {length} characters: {head}"


def _pump(stream, lines: queue.Queue) -> None:
    for line in _bounded_lines(stream, MAX_LINE):
        lines.put(line)
    lines.put(None)


def _tail(stream, tail: list[str], keep: int = 200) -> None:
    for line in _bounded_lines(stream, 64 * 1024):
        tail.append(line)
        if len(tail) > keep:
            del tail[0]


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether `value` nests objects and lists more than `limit` deep (walked without recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > limit:
                return True
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def run_once(argv: list[str], env: dict[str, str], cwd: Path, status: Path | None, prompt: str, timeout: float) -> str:
    """Run `argv` with `prompt` on stdin and return its stdout (a quota probe); its processes end with it, checked
    (`end_turn_processes`). EXECUTOR_ERROR when it cannot start or outlasts `timeout`."""
    try:
        proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True, start_new_session=True,
        )  # fmt: skip
    except OSError as exc:
        raise GraphLemonError(ErrorCode.EXECUTOR_ERROR, f"quota probe: {exc}", executor="claude_code") from None
    try:
        with tracked(proc):
            return proc.communicate(prompt, timeout=timeout)[0]
    except subprocess.TimeoutExpired as exc:
        raise GraphLemonError(ErrorCode.EXECUTOR_ERROR, f"quota probe: {exc}", executor="claude_code") from None
    finally:
        end_turn_processes(proc, status)


def end_turn_processes(proc: subprocess.Popen, status: Path | None, rec: TurnRecorder | None = None) -> None:
    """End the `claude` process and every process of its sandbox (testrun/sandbox_end.py), checked: EXECUTOR_ERROR
    naming those that still run after SIGKILL."""
    left = end_run(proc, status)
    if rec is not None:
        rec.event("processes_ended", left=left)
    if left:
        raise GraphLemonError(
            ErrorCode.EXECUTOR_ERROR,
            f"the claude turn's processes did not all end: {', '.join(left[:20])} still run after SIGKILL",
            executor="claude_code", left=left,
        )  # fmt: skip
