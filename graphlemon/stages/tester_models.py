"""Tester records (docs/tester.md): the run's result.json and the stage's TesterOutput."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..models import ExecutorName, NextAction, RunFailure, TestSummary

TesterMode = Literal["test", "retry", "resume"]


class TesterFailure(RunFailure):
    """One failure in result.json: the ledger's failure record, whose hint the Tester must always give."""

    __test__ = False

    hint: str = Field(min_length=1)


class TesterResult(BaseModel):
    """`.graphlemon/units/<unit_id>/runs/<run_id>/result.json` (validated before it is written)."""

    model_config = ConfigDict(extra="forbid")
    __test__ = False

    run_id: str
    loop: Literal["L1"] = "L1"
    unit_id: str
    agent: Literal["tester"] = "tester"
    mode: TesterMode
    attempt: int = Field(ge=1)
    ok: bool
    summary: TestSummary
    failures: list[TesterFailure] = Field(default_factory=list)
    next_action: NextAction
    retry_budget_left: int = Field(ge=0)
    acceptance_coverage: float = Field(ge=0, le=1)
    contract_coverage: float = Field(ge=0, le=1)
    uncovered_criteria: list[str] = Field(default_factory=list)
    uncovered_statuses: list[int] = Field(default_factory=list)
    crashed: bool = False
    crash_reason: str | None = None
    timed_out: bool = False
    framework: str | None = None
    command: str = ""
    confinement: Literal["bwrap", "none"] = "none"  # how the tests ran (testrun/confine.py)
    exit_code: int | None = None
    stdout_tail: str = ""
    duration_ms: int = 0
    tokens_used: int = 0


class BugTransitionRef(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    id: str
    from_: str = Field(alias="from")
    to: str


class TesterOutput(BaseModel):
    """What the Tester stage returns: the run's summary, failures with hints, next_action, retry budget, self-check."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    __test__ = False

    ok: bool
    mode: TesterMode
    unit_id: str
    run_id: str
    result_ref: str
    summary: TestSummary
    failures: list[TesterFailure] = Field(default_factory=list)
    bugs_opened: list[str] = Field(default_factory=list)
    bugs_transitioned: list[BugTransitionRef] = Field(default_factory=list)
    acceptance_coverage: float = Field(ge=0, le=1)
    contract_coverage: float = Field(ge=0, le=1)
    crashed: bool = False
    next_action: NextAction
    retry_budget_left: int = 0
    duration_ms: int = 0
    tokens_used: int = 0
    executor: ExecutorName = "none"
    self_check_violations: list[str] = Field(default_factory=list)
    accepted: bool = True  # False: the tester turn failed the self-check twice (node failed)


class TesterAgentOutput(BaseModel):
    """The tester role's answer for one turn."""

    model_config = ConfigDict(extra="forbid")
    __test__ = False

    tests: list[str] = Field(default_factory=list, description="The test files you wrote or kept, relative to the work tree")
    hints: dict[str, str] = Field(
        default_factory=dict, description="Test name -> a hint for the Coder: what to change, in one or two sentences"
    )
    summary: str = Field(default="", description="A few sentences: what the tests cover and what fails")
