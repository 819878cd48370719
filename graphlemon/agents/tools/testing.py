"""run_tests: the structured test runner (`graphlemon test --json`, see docs/testrun.md) as an agent tool.

It runs as a child process through the runner's fixed command-line interface, so
a hanging or crashing suite can never take the agent loop down with it. Agents
choose targets, framework, last-failed and a timeout; they cannot pass an
arbitrary shell command (`--command` is for people).
"""

from __future__ import annotations

import json
import subprocess
import sys

from pydantic import BaseModel, ConfigDict, Field

from ...errors import ErrorCode, GraphLemonError
from ..context import ToolContext
from .registry import tool


class RunTestsArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    targets: list[str] = Field(default_factory=list, max_length=50, description="Files, folders or test ids.")
    framework: str | None = Field(default=None, description="Override detection (pytest, vitest, jest, ...).")
    last_failed: bool = False
    timeout_s: float = Field(default=120, gt=0, le=600)


@tool("run_tests", "Run the project's tests once and get a structured summary (counts, failures with hints).")
def run_tests(ctx: ToolContext, args: RunTestsArgs) -> dict:
    for target in args.targets:
        if target.startswith("-"):
            raise GraphLemonError(ErrorCode.INVALID_PARAM, f"run_tests: target {target!r} looks like an option")
        ctx.sandbox.resolve_read(target.split("::", 1)[0])
    argv = [sys.executable, "-m", "graphlemon", "test", *args.targets, "--project", str(ctx.sandbox.root), "--json"]
    argv += ["--timeout", str(args.timeout_s)]
    if args.framework:
        argv += ["--framework", args.framework]
    if args.last_failed:
        argv.append("--last-failed")
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=args.timeout_s + 60, cwd=ctx.sandbox.root)
    except subprocess.TimeoutExpired:
        raise GraphLemonError(
            ErrorCode.TEST_RUNNER_ERROR, "run_tests: the test runner did not return in time"
        ) from None
    if proc.returncode in (0, 1) and proc.stdout.strip():
        try:
            return json.loads(proc.stdout)
        except ValueError:
            pass
    detail = (proc.stderr or proc.stdout).strip()[-2000:]
    raise GraphLemonError(
        ErrorCode.TEST_RUNNER_ERROR, f"run_tests: the test runner failed (exit {proc.returncode}): {detail}"
    )
