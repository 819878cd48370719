"""What every framework variant provides: its command, its report, its parsers, its crash reading."""

from __future__ import annotations

import re
import shlex
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from ..parsers.common import make_failure, run_failure_message
from ..result_models import FrameworkName, ParsedRun, TestFailure
from ..targets import Targets


@dataclass(frozen=True)
class RunRequest:
    run_dir: Path  # where the framework runs (the folder its config was found in)
    report_dir: Path  # a private temp folder for report files
    targets: Targets
    rerun: list[str] = field(default_factory=list)  # selectors of the tests that failed last time


@dataclass(frozen=True)
class Invocation:
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    report: Path | None = None  # the machine-readable report this run writes, if any
    name_filter: str | None = None  # the name regex given to the framework (its non-matching tests report as skipped)
    stdout_is_report: bool = False  # the report is the command's stdout (go test -json); stderr alone is the output

    @property
    def display(self) -> str:
        return shlex.join(self.argv)


class Framework(ABC):
    """One test framework. Subclasses set `name`, define `invocation` and override what differs."""

    name: ClassVar[FrameworkName]
    # output lines saying the suite is empty (not a crash: ok is false because total is 0)
    no_tests_pattern: ClassVar[re.Pattern[str] | None] = None

    @abstractmethod
    def invocation(self, request: RunRequest) -> Invocation:
        """The argv (and report hooks) that run `request` with this framework."""

    def custom_invocation(self, command: str, run_dir: Path, report_dir: Path) -> Invocation:
        """A user's `--command`, run by the shell, with whatever report hooks work through the environment."""
        return Invocation(["/bin/sh", "-c", command])

    @abstractmethod
    def parse(self, report: str | None, output: str) -> ParsedRun:
        """The report when there is one, else the human output (never raises on garbled input)."""

    def human_output(self, report: str | None, output: str) -> str:
        """The text a person would have read (for the output tail); the raw output for most frameworks."""
        return output

    def no_tests(self, output: str, exit_code: int | None) -> bool:
        return bool(self.no_tests_pattern and self.no_tests_pattern.search(output))

    def without_report(self, invocation: Invocation, report: str | None, output: str) -> Invocation | None:
        """When the run could not load what writes the report (so it ran nothing), the same run without it, read
        from the human output; None when the run did not stop there."""
        return None

    def hint_rules(self) -> tuple[Callable[..., str | None], ...]:
        """This framework's own hint rules (`hints.FrameworkRule`), tried before the generic ones."""
        return ()

    def runner_error(self, output: str, exit_code: int | None) -> TestFailure:
        """The synthetic failure for a non-zero exit that no failing test explains."""
        return make_failure(f"{self.name}: run failed", message=run_failure_message(output, exit_code),
                            detail=output[-8000:])  # fmt: skip


def file_and_name(selector: str) -> tuple[str, str]:
    """A `file<TAB>name` selector split in two (the name may be empty: rerun the whole file)."""
    file, _, name = selector.partition("\t")
    return file, name


def selector_file(selector: str) -> str:
    return selector.partition("\t")[0].partition("::")[0]
