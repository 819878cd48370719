"""The structured result of one test run (the fixed `graphlemon test --json` contract).

`TestRunResult` dumps to exactly
`{ok, framework, command, exit_code, duration_ms, timed_out, crashed,
summary: {total, passed, failed, skipped},
failures: [{name, file, line, message, expected, got, hint}], output_tail}`.
`cases` (every test, passed ones too) and a failure's `detail` (its full error text)
travel in Python only; they are excluded from the JSON.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from ..models import TestSummary

CaseStatus = Literal["passed", "failed", "skipped"]
FrameworkName = Literal["pytest", "vitest", "jest", "mocha", "node", "npm-test", "go", "cargo"]
FRAMEWORKS: tuple[FrameworkName, ...] = ("pytest", "vitest", "jest", "mocha", "node", "npm-test", "go", "cargo")


class TestCase(BaseModel):
    """One test as the framework reported it."""

    model_config = ConfigDict(extra="forbid")
    __test__ = False  # not a pytest class

    name: str
    file: str | None = None
    line: int | None = None
    status: CaseStatus
    selector: str | None = None  # framework-specific id used to rerun it (last-failed)


class TestFailure(BaseModel):
    """One failing test (or a synthetic failure: collection error, crash, timeout)."""

    model_config = ConfigDict(extra="forbid")
    __test__ = False

    name: str
    file: str | None = None
    line: int | None = None
    message: str = ""
    expected: str | None = None
    got: str | None = None
    hint: str = ""
    detail: str = Field(default="", exclude=True)  # full error text / stack, for hints and triage


class TestRunResult(BaseModel):
    """One run of a project's tests, summarised."""

    model_config = ConfigDict(extra="forbid")
    __test__ = False

    ok: bool
    framework: FrameworkName | None
    command: str
    exit_code: int | None
    duration_ms: int
    timed_out: bool = False
    crashed: bool = False
    summary: TestSummary = Field(default_factory=TestSummary)
    failures: list[TestFailure] = Field(default_factory=list)
    output_tail: str = ""
    confinement: Literal["bwrap", "none"] = Field(default="none", exclude=True)  # how it ran (testrun/confine.py)
    cases: list[TestCase] = Field(default_factory=list, exclude=True)


class ParsedRun(BaseModel):
    """What a parser read from a report or from the human output."""

    model_config = ConfigDict(extra="forbid")

    cases: list[TestCase] = Field(default_factory=list)
    failures: list[TestFailure] = Field(default_factory=list)
    counts: TestSummary | None = None  # from a summary line, when the output names only some tests
    running: TestCase | None = None  # a test that started and never finished (the hang, on timeout)
    source: Literal["report", "text", "none"] = "none"

    @property
    def found(self) -> bool:
        return bool(self.cases or self.failures or (self.counts and self.counts.total))
