"""`ToolContext`: what a tool call needs (project and ledger, sandbox, ids) and what it leaves behind."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import GraphLemonError
from ..ledger import Ledger
from ..models import NodeEvent, Stage
from ..project import ProjectHandle
from ..redact import Redactor
from .executor_seam import AgentRequest, ToolError
from .sandbox import Sandbox


@dataclass
class ToolContext:
    project: ProjectHandle
    sandbox: Sandbox
    role: str
    node_exec_id: str
    task_id: str | None = None
    unit_id: str | None = None
    run_id: str | None = None
    attempt: int = 1
    redactor: Redactor = field(default_factory=Redactor)
    files_changed: set[str] = field(default_factory=set)
    tool_errors: list[ToolError] = field(default_factory=list)

    @classmethod
    def for_request(
        cls, project: ProjectHandle, request: AgentRequest, redactor: Redactor | None = None
    ) -> ToolContext:
        return cls(
            project=project,
            sandbox=Sandbox(request.sandbox),
            role=request.role,
            node_exec_id=request.node_exec_id or f"ne-adhoc-{secrets.token_hex(4)}",
            task_id=request.task_id,
            unit_id=request.unit_id,
            run_id=request.run_id,
            attempt=request.attempt,
            redactor=redactor or Redactor(),
        )

    @property
    def ledger(self) -> Ledger:
        return self.project.ledger

    @property
    def stage(self) -> Stage:
        return self.role

    @property
    def state_dir(self) -> Path:
        return self.project.state_dir

    def record_tool_error(self, tool: str, err: GraphLemonError) -> ToolError:
        """Remember a failed tool call; a sandbox violation also becomes a node event in the ledger."""
        message = self.redactor.text(err.message)
        error = ToolError(tool=tool, code=str(err.code), message=message, path=err.context.get("path"))
        self.tool_errors.append(error)
        if error.code == "SANDBOX_VIOLATION":
            self.ledger.append(
                NodeEvent(
                    event="violation",
                    node_exec_id=self.node_exec_id,
                    task_id=self.task_id,
                    stage=self.stage,
                    unit_id=self.unit_id,
                    attempt=self.attempt,
                    status="running",
                    error_code=error.code,
                    error=f"{tool}: {message}",
                )
            )
        return error
