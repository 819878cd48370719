"""run_tests: the structured test runner (`graphlemon.testrun.run_tests`, docs/testrun.md) as an agent tool.

The runner owns the child process (its own process group, killed on timeout,
secrets removed from its environment) and returns a compact summary. Agents
choose targets, framework, last-failed and a timeout; they cannot pass an
arbitrary shell command (`--command` is for people). The run is confined
(testrun/confine.py), and whatever it changed that the role may not change is
reverted, recorded as a violation and listed in the result (agents/effects.py).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from ...errors import ErrorCode, GraphLemonError, invalid_param
from ..effects import TreeGuard, clear_special_files, violation
from ..tool_context import ToolContext
from .registry import tool


class RunTestsArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    targets: list[str] = Field(default_factory=list, max_length=50, description="Files, folders or test ids.")
    framework: str | None = Field(default=None, description="Override detection (pytest, vitest, jest, ...).")
    last_failed: bool = False
    timeout_s: float = Field(default=120, gt=0, le=600)


@tool(
    "run_tests",
    "Run the project's tests once (pytest, vitest, jest, ... detected): counts, and each failure with its message, "
    "location and a hint. Give targets to run only what you changed; last_failed re-runs the failures. The run is "
    "confined and killed at timeout_s; what the tests change outside your writable paths is reverted and listed.",
)
def run_tests(ctx: ToolContext, args: RunTestsArgs) -> dict:
    from ...testrun import run_tests as run
    from ...testrun.confine import for_workdir

    for target in args.targets:
        if target.startswith("-"):
            raise invalid_param(f"run_tests: target {target!r} looks like an option")
        ctx.sandbox.resolve_read(target.split("::", 1)[0])
    guard = TreeGuard(ctx.sandbox)  # what the tests change is judged like any tool's effect
    result = run(
        ctx.sandbox.root, args.targets, framework=args.framework, last_failed=args.last_failed, timeout=args.timeout_s,
        confinement=for_workdir(ctx.sandbox.root, ctx.state_dir),
    )  # fmt: skip
    out = result.contract().model_dump(mode="json")  # as `graphlemon test --json` prints it
    for refused in result.refused_reads:  # a link or FIFO the run planted for the host to read: not followed
        ctx.record_tool_error("run_tests", GraphLemonError(ErrorCode.SANDBOX_VIOLATION, refused))
    refusals = clear_special_files(ctx.sandbox.root)  # before git looks: a FIFO the run left would block it
    refusals += guard.judge()
    for refusal in refusals:  # the run stands; each forbidden change it made is reverted and recorded
        ctx.record_tool_error("run_tests", violation("run_tests", [refusal]))
    if refusals:
        out["reverted"] = [r.path for r in refusals]
    return out
