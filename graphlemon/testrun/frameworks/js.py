"""vitest, jest and mocha: each writes its JSON report to a temp file; the human output is the fallback."""

from __future__ import annotations

import re
from pathlib import Path

from ..models import ParsedRun, TestCase, TestFailure
from ..parsers.common import error_summary, make_failure
from ..parsers.jest_json import parse_jest_json
from ..parsers.jest_text import parse_jest_text
from ..parsers.js_common import name_regex
from ..parsers.mocha_json import parse_mocha_json
from ..parsers.mocha_text import parse_mocha_text
from ..parsers.vitest_text import parse_vitest_text, unhandled_errors
from .base import Framework, Invocation, RunRequest, file_and_name


def node_bin(run_dir: Path, name: str) -> list[str]:
    """The project's own `node_modules/.bin/NAME` (this folder or above), else `npx --no NAME`."""
    for folder in (run_dir, *run_dir.parents):
        candidate = folder / "node_modules" / ".bin" / name
        if candidate.exists():
            return [str(candidate)]
    return ["npx", "--no", name]


def selection(request: RunRequest) -> tuple[list[str], str | None]:
    """(paths, name regex) for targets, or for the last failures (files + their exact names)."""
    if request.rerun:
        files, names = [], []
        for selector in request.rerun:
            file, name = file_and_name(selector)
            files.append(file)
            names.append(name)
        unique_files = list(dict.fromkeys(f for f in files if f))
        if not all(names):  # a whole file failed (it did not load): rerun those files whole
            return unique_files, None
        return unique_files, name_regex(list(dict.fromkeys(names)), anchored=True)
    patterns = request.targets.patterns
    return list(request.targets.paths), name_regex(patterns, anchored=False) if patterns else None


class Vitest(Framework):
    name = "vitest"
    no_tests_pattern = re.compile(r"No test files found|No test suite found", re.I)

    def invocation(self, request: RunRequest) -> Invocation:
        report = request.report_dir / "vitest.json"
        paths, names = selection(request)
        argv = [*node_bin(request.run_dir, "vitest"), "run", "--reporter=default", "--reporter=json",
                f"--outputFile.json={report}", *paths]  # fmt: skip
        if names:
            argv += ["-t", names]
        return Invocation(argv, report=report, name_filter=names)

    def parse(self, report: str | None, output: str) -> ParsedRun:
        parsed = parse_jest_json(report) if report else ParsedRun()
        if not parsed.found:
            parsed = parse_vitest_text(output)
        for failure in unhandled_errors(output):
            parsed.failures.append(failure)
            parsed.cases.append(_failed_case(failure))
        return parsed


class Jest(Framework):
    name = "jest"
    no_tests_pattern = re.compile(r"No tests found", re.I)

    def invocation(self, request: RunRequest) -> Invocation:
        report = request.report_dir / "jest.json"
        paths, names = selection(request)
        argv = [*node_bin(request.run_dir, "jest"), "--json", f"--outputFile={report}", "--testLocationInResults",
                *(re.escape(p) for p in paths)]  # fmt: skip
        if names:
            argv += ["-t", names]
        return Invocation(argv, report=report, name_filter=names)

    def parse(self, report: str | None, output: str) -> ParsedRun:
        parsed = parse_jest_json(report) if report else ParsedRun()
        return parsed if parsed.found else parse_jest_text(output)


class Mocha(Framework):
    name = "mocha"
    no_tests_pattern = re.compile(r"No test files found", re.I)

    def invocation(self, request: RunRequest) -> Invocation:
        report = request.report_dir / "mocha.json"
        paths, names = selection(request)
        argv = [
            *node_bin(request.run_dir, "mocha"),
            "--reporter",
            "json",
            "--reporter-option",
            f"output={report}",
            *paths,
        ]
        if names:
            argv += ["--grep", names]
        return Invocation(argv, report=report, name_filter=names)

    def parse(self, report: str | None, output: str) -> ParsedRun:
        parsed = parse_mocha_json(report) if report else ParsedRun()
        return parsed if parsed.found else parse_mocha_text(output)

    def runner_error(self, output: str, exit_code: int | None) -> TestFailure:
        required = re.search(r"Require stack:\n- (\S+)|imported from (\S+)", output)
        file = (required.group(1) or required.group(2)) if required else None
        return make_failure(
            f"mocha: {file or 'run'} failed to load" if file else "mocha: run failed", file=file,
            message=error_summary(output) or f"mocha exited with code {exit_code}", detail=output[-8000:],
        )  # fmt: skip


def _failed_case(failure: TestFailure) -> TestCase:
    return TestCase(name=failure.name, file=failure.file, line=failure.line, status="failed")
