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

from ..test_counts import TestSummary

CaseStatus = Literal["passed", "failed", "skipped"]
CountsSource = Literal["report", "text", "summary", "none"]
# "specific": a rule's preconditions held and the hint says what they imply; "facts": no rule applied, the
# hint states only what is known (location, call, error, where the values differ)
HintConfidence = Literal["specific", "facts"]
# what a truth test (`assert x`, `assert not x`, assertTrue, `t.ok`) requires of its one value
TruthRequirement = Literal["truthy", "falsy"]
# how a reporter prints compared values (value_types.py reads each in its own grammar): Python reprs, JSON,
# JavaScript's inspect forms, mocha's diff form (or raw strings), Go's %v, Rust's Debug, a value that is the
# string it shows ("text"), or unknown ("any": every grammar is tried)
ValueGrammar = Literal["python", "json", "js", "mocha", "go", "rust", "text", "any"]
FrameworkName = Literal["pytest", "unittest", "vitest", "jest", "mocha", "node", "npm-test", "go", "cargo"]
FRAMEWORKS: tuple[FrameworkName, ...] = (
    "pytest",
    "unittest",
    "vitest",
    "jest",
    "mocha",
    "node",
    "npm-test",
    "go",
    "cargo",
)


class TestCase(BaseModel):
    """One test as the framework reported it."""

    model_config = ConfigDict(extra="forbid")
    __test__ = False  # not a pytest class

    name: str
    file: str | None = None
    line: int | None = None
    status: CaseStatus
    selector: str | None = None  # framework-specific id used to rerun it (last-failed)


class Operands(BaseModel):
    """The two compared values as the reporter gave them (Python only, not in the JSON).

    `sided`: the reporter (its labels, the assertion's form, or the assertion it printed) establishes which
    operand is expected; then they are the failure's `expected`/`got`. Otherwise (`assert_eq!`'s left/right,
    unittest's `first != second`) `expected`/`got` stay null and the values are `first`/`second`, named
    by `labels` as the reporter names them. `shortened`: the reporter abbreviated them (unittest's
    `[58 chars]`), so the values are unknown and only their printed forms are kept, in `first`/`second`.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    labels: tuple[str, str] = ("expected", "got")
    sided: bool = True
    grammar: ValueGrammar = "any"
    shortened: bool = False
    first: str | None = None
    second: str | None = None
    # a truth test of a value that is no boolean: `first` is that value, this what the test requires of it
    truth: TruthRequirement | None = None


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
    # 1-based position of the first character where expected and got differ (compared whole, before
    # they were shortened for display to a window around it); None when they are not both known
    difference_at: int | None = None
    subtest: str | None = None  # a failing subtest's parameters (`(i=1)`, `[msg] (i=2)`); name is its test
    hint_confidence: HintConfidence = "facts"  # whether `hint` is a rule's finding or the facts only
    detail: str = Field(default="", exclude=True)  # full error text / stack, for hints and triage
    # `line` is where the test is declared (node:test's `location`, jest's), not the failing check: no frame of its
    # stack is in the test file
    declared: bool = Field(default=False, exclude=True)
    operands: Operands | None = Field(default=None, exclude=True)  # how the reporter gave the compared values


class SubtestCounts(BaseModel):
    model_config = ConfigDict(extra="forbid")

    passed: int = 0
    failed: int = 0


NO_MESSAGES = ("", "failed", "failed (no message)")  # a parser's placeholders when the runner printed no reason


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
    # where the summary's numbers come from: the machine-readable report, the runner's text, its own
    # closing summary (when it disagreed with the report or was all there was), or nowhere
    counts_source: CountsSource = "none"
    unparsed: bool = False  # the command ran but no test result could be read from it (see output_tail)
    warnings: list[str] = Field(default_factory=list)
    # subtests (unittest subTest, pytest's subtests fixture) counted apart: the summary counts tests
    subtests: SubtestCounts | None = None
    # false when the run stopped early (timeout, cancel, a crash mid-suite) or its output's format does not name every
    # test (go test's text without -v: no line for a passing test): the counts are what the output proves
    complete: bool = True
    confinement: Literal["bwrap", "none"] = Field(default="none", exclude=True)  # how it ran (testrun/confine.py)
    # the run's files the host refused to read (a link or FIFO it planted in its scratch folder): sandbox violations
    refused_reads: list[str] = Field(default_factory=list, exclude=True)
    cases: list[TestCase] = Field(default_factory=list, exclude=True)

    def tail_needed(self) -> bool:
        """Whether a reader needs the raw output: the result does not explain itself (counts not read,
        crashed, timed out, a failing run with no failure named, a failure without a message, or a
        warning about the counts of a run that is not ok). Otherwise every failure already carries its
        message and values."""
        unexplained = not self.ok and not self.failures
        silent = any(f.message.strip() in NO_MESSAGES for f in self.failures)
        return (
            self.crashed or self.unparsed or self.timed_out or self.counts_source == "none" or unexplained
            or silent or (bool(self.warnings) and not self.ok)  # a green run's warning says all it needs to
        )  # fmt: skip

    def contract(self) -> TestRunResult:
        """What a reader gets (`--json`, the agents' run_tests tool): this result, its `output_tail`
        emptied when not `tail_needed()` (it is most of the bytes of a run that names its failures;
        the Python result, and so the ledger and the integrator's log, keep it)."""
        return self if self.tail_needed() else self.model_copy(update={"output_tail": ""})

    def contract_json(self) -> str:
        return self.contract().model_dump_json()


class ParsedRun(BaseModel):
    """What a parser read from a report or from the human output."""

    model_config = ConfigDict(extra="forbid")

    cases: list[TestCase] = Field(default_factory=list)
    failures: list[TestFailure] = Field(default_factory=list)
    counts: TestSummary | None = None  # from a summary line, when the output names only some tests
    running: TestCase | None = None  # a test that started and never finished (the hang, on timeout)
    source: Literal["report", "text", "none"] = "none"
    # the runner's own totals (its closing summary or run statistics), reconciled with the cases
    summary_counts: TestSummary | None = None
    summary_label: str = ""  # where they were read, for the warning when they disagree
    subtests_passed: int = 0
    subtests_failed: int = 0
    # the tests the output's format never names, when there are such (go test's text without -v or -json prints no
    # line for a passing test): the counts are then what the output proves, not the whole run (`complete` false)
    unreported: str = ""
    # the runner stopped the run itself before it finished (go test's `-timeout` panic ends the whole test binary):
    # whether tests were left unrun is not printed, so the run is not complete
    stopped: str = ""

    @property
    def found(self) -> bool:
        return bool(self.cases or self.failures or (self.counts and self.counts.total))
