"""The scripted backend: replays a playbook turn through the same sandboxed tools as the LLM backends.

Deterministic and offline; every result and usage record it produces says
`executor: scripted` (model `scripted`), so scripted output is never mistaken for
a model's work.
"""

from __future__ import annotations

import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

from ..errors import ClassifierBlocked, ErrorCode, GraphLemonError, QuotaExceeded
from ..models import ExecutorName, utcnow
from .budget import preflight
from .executor_seam import AgentRequest, AgentResult
from .playbook import Playbook, RaiseSpec, Turn, substitute
from .tool_context import ToolContext
from .tools import call_tool
from .turn import TurnRecorder

SCRIPTED_MODEL = "scripted"


class ScriptedExecutor:
    name: ExecutorName = "scripted"

    def __init__(self, playbook: Playbook) -> None:
        self.playbook = playbook
        self._used: dict[int, int] = {}  # turn index -> times used (for `times:`)
        self._mutex = threading.Lock()  # parallel units share the executor: a `times: 1` turn is used once

    @classmethod
    def from_file(cls, path: Path | str) -> ScriptedExecutor:
        return cls(Playbook.load(path))

    def plays(self, role: str) -> bool:
        """Whether the playbook scripts `role` at all (a role it does not script is left to GraphLemon's own rules)."""
        return any(t.match.role == role for t in self.playbook.turns)

    def run(self, request: AgentRequest, ctx: ToolContext) -> AgentResult:
        with self._mutex:
            index, turn = self.playbook.select(
                request.role, request.unit_id, request.attempt, request.task_id, self._used
            )
            self._used[index] = self._used.get(index, 0) + 1
        label = turn.label(index)
        rec = TurnRecorder(self.name, request, ctx)
        rec.event("playbook_turn", playbook=self.playbook.source, turn=label)
        if turn.usage is not None:
            self._spend(turn, rec, ctx)
        if turn.raise_ is not None:
            rec.event("raise", **turn.raise_.model_dump())
            raise _simulated_error(turn.raise_, label)
        scope: dict[str, Any] = {
            "request": request.model_dump(mode="json", include={"role", "unit_id", "run_id", "task_id", "attempt"})
        }
        scope["request"]["node_exec_id"] = ctx.node_exec_id
        for step, action in enumerate(turn.actions, 1):
            if step > request.limits.max_turns:
                return rec.finish(
                    "max_turns", output_error=f"{label}: more actions than max_turns={request.limits.max_turns}"
                )
            if rec.elapsed() > request.limits.timeout_s:
                return rec.finish(
                    "timeout", output_error=f"{label}: over the {request.limits.timeout_s:g}s turn timeout"
                )
            where = f"playbook {self.playbook.source}: {label} step {step}"
            args = substitute(action.args, scope, where)
            rec.event("tool_call", step=step, tool=action.tool, args=args)
            outcome = call_tool(ctx, action.tool, args, allowed=request.tools)
            rec.turns += 1
            rec.event("tool_result", step=step, tool=action.tool, ok=outcome.ok, content=outcome.content)
            if action.expect == "ok" and not outcome.ok or action.expect == "error" and outcome.ok:
                raise GraphLemonError(
                    ErrorCode.EXECUTOR_ERROR,
                    f"{where}: {action.tool} expected {action.expect} but got "
                    + (f"an error: {outcome.content}" if not outcome.ok else "success"),
                )
            if action.save_as:
                scope[action.save_as] = outcome.content if outcome.ok else {"error": outcome.content}
        if turn.output is None:
            return rec.finish("output_invalid", output_error=f"{label}: the playbook turn has no output")
        output, problem = rec.validate_output(
            substitute(turn.output, scope, f"playbook {self.playbook.source}: {label} output")
        )
        if problem:
            return rec.finish("output_invalid", output_error=f"{label}: {problem}")
        return rec.finish("completed", output=output)

    def _spend(self, turn: Turn, rec: TurnRecorder, ctx: ToolContext) -> None:
        usage = turn.usage
        assert usage is not None
        preflight(
            ctx.ledger,
            rec.request.task_id,
            model=SCRIPTED_MODEL,
            input_tokens=usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens,
            max_output_tokens=usage.output_tokens,
            min_output_tokens=usage.output_tokens,
        )
        rec.record_usage(model=SCRIPTED_MODEL, stop_reason="end_turn", **usage.model_dump())


def _simulated_error(spec: RaiseSpec, label: str) -> GraphLemonError:
    message = spec.message or f"simulated by the playbook ({label})"
    if spec.error == "quota_exceeded":
        resets = utcnow() + timedelta(seconds=spec.resets_in_s) if spec.resets_in_s is not None else None
        return QuotaExceeded(spec.limit_type, resets, f"{spec.limit_type} usage limit reached: {message}")
    if spec.error == "classifier_blocked":
        return ClassifierBlocked(f"auto-mode classifier blocked the turn: {message}")
    return GraphLemonError(ErrorCode.EXECUTOR_ERROR, message)
