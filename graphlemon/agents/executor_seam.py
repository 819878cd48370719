"""What crosses the Executor seam (executor_protocol.py): one call runs one role turn.

An `AgentRequest` names the role, its rendered skill (`system`) and task context
(`prompt`), the working directory, the sandbox, the tools it may call, the limits
and the ids the ledger needs. An `Executor` (scripted, anthropic, claude_code —
peers behind one Protocol) runs the turn against a `ToolContext` and returns an
`AgentResult`: the structured output validated by the role's pydantic schema,
the files it changed, token usage, the transcript path and why it stopped.

Terminal conditions are raised, never returned: `BudgetExceeded`,
`QuotaExceeded`, `ClassifierBlocked`, `GraphLemonError(EXECUTOR_ERROR)`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..models import ExecutorName, Stage

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"  # ids become path parts and globs: no '/', '..', '*'
StopReason = Literal["completed", "max_turns", "timeout", "output_invalid", "refused", "no_tool_use", "repeated_calls"]
MISBEHAVIOUR: tuple[StopReason, ...] = ("refused", "no_tool_use", "repeated_calls")  # agents/misbehaviour.py


class Limits(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_turns: int = Field(default=20, ge=1, le=500)  # model calls (LLM) / actions (scripted)
    timeout_s: float = Field(default=600.0, gt=0, le=86_400)


class SandboxPolicy(BaseModel):
    """Where a role may write: glob allow-list relative to `root` (`**` never reaches .git/ or .graphlemon/)."""

    model_config = ConfigDict(extra="forbid")

    root: Path
    writable: list[str] = Field(default_factory=list)
    allow_mode_change: bool = False  # may the role's patches set or clear a file's executable bit?
    allow_binary: bool = False  # may the role's patches carry binary (GIT binary patch) changes?


class AgentRequest(BaseModel):
    """One role turn."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    role: Stage
    system: str  # the role's skill: the same for every turn of the role, so it is prompt-cached (agents/prompt.py)
    prompt: str  # the stage's context for this turn (per unit); the previous attempt goes last
    documents: dict[str, str] = Field(default_factory=dict)  # shared by every unit of the task (cached), by title
    memory: str = ""  # the role's memory, shown in the first message (it changes between turns)
    workdir: Path
    sandbox: SandboxPolicy
    tools: list[str] = Field(default_factory=list)
    output_model: type[BaseModel] | None = Field(default=None, exclude=True)
    model: str | None = None  # overrides the settings' model for the role
    task_id: str | None = Field(default=None, pattern=ID_PATTERN)
    node_exec_id: str | None = Field(default=None, pattern=ID_PATTERN)  # names the transcript folder
    unit_id: str | None = Field(default=None, pattern=ID_PATTERN)  # fills sandbox globs
    run_id: str | None = Field(default=None, pattern=ID_PATTERN)
    attempt: int = Field(default=1, ge=1)
    skill_commit: str | None = None  # the skills-repo commit `system` was rendered from (None: the built-in skill)
    limits: Limits = Field(default_factory=Limits)

    @field_validator("prompt", "system")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value

    @property
    def stage(self) -> Stage:
        return self.role


class UsageTotals(BaseModel):
    """The sum of a turn's usage records."""

    model_config = ConfigDict(extra="forbid")

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: float = 0.0
    calls: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens

    def add(self, other: Any) -> None:
        """Add a `UsageRecord` (or another `UsageTotals`)."""
        for name in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.cost_usd = round(self.cost_usd + other.cost_usd, 6)
        self.calls += getattr(other, "calls", 1)


class ToolError(BaseModel):
    """A tool call that failed; the agent saw `message` as the tool's result."""

    model_config = ConfigDict(extra="forbid")

    tool: str
    code: str
    message: str
    path: str | None = None


class AgentResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    executor: ExecutorName
    role: Stage
    model: str | None = None
    output: dict[str, Any] | None = None  # validated by the request's output_model; None unless completed
    output_error: str | None = None
    stop_reason: StopReason
    files_changed: list[str] = Field(default_factory=list)
    reverted_paths: list[str] = Field(default_factory=list)  # claude_code: out-of-sandbox changes undone
    tool_errors: list[ToolError] = Field(default_factory=list)
    usage: UsageTotals = Field(default_factory=UsageTotals)
    transcript_path: str | None = None
    turns: int = 0
    duration_ms: int = 0
    task_id: str | None = None
    node_exec_id: str | None = None
    unit_id: str | None = None
    attempt: int = 1

    @property
    def ok(self) -> bool:
        return self.stop_reason == "completed"

    @property
    def violations(self) -> list[ToolError]:
        return [e for e in self.tool_errors if e.code == "SANDBOX_VIOLATION"]
