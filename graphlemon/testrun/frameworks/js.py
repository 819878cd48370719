"""vitest, jest and mocha: each writes its JSON report to a temp file; the human output is the fallback."""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..npm_scripts import runner_arguments, script_runners
from ..parsers.common import make_failure, run_failure_message
from ..parsers.jest_json import parse_jest_json
from ..parsers.jest_text import parse_jest_text
from ..parsers.js_common import name_regex
from ..parsers.mocha_events import parse_mocha_events
from ..parsers.mocha_json import parse_mocha_json
from ..parsers.mocha_text import mocha_text_counts, parse_mocha_text
from ..parsers.vitest_text import parse_vitest_text, unhandled_errors
from ..result_models import ParsedRun, TestCase, TestFailure
from .framework import Framework, Invocation, RunRequest, file_and_name


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
    """mocha as the project runs it: `npm test` when its test script starts mocha (through `npm run`
    chains, `nyc`, lint steps), else the project's `mocha` with the targets. Our hook (NODE_OPTIONS
    --require) records mocha's runner events whatever the reporter and arguments; a JSON reporter's
    output on stdout (mocha < 10 ignores `--reporter-option output=`) and the spec text are fallbacks.
    """

    name = "mocha"
    no_tests_pattern = re.compile(r"No test files found", re.I)

    def invocation(self, request: RunRequest) -> Invocation:
        report = request.report_dir / "mocha-events.jsonl"
        paths, names = selection(request)
        if not paths and not names and "mocha" in script_runners(request.run_dir, "test"):
            return Invocation(["npm", "test"], env=mocha_hook_env(report), report=report)
        # the project's own options (`-u tdd`, `--require`, `--config`, …) from its test script, its spec paths
        # replaced by the targets
        options = mocha_options(runner_arguments(request.run_dir, "mocha") or [], keep_grep=not names)
        argv = [*node_bin(request.run_dir, "mocha"), *options, *paths]
        if names:
            argv += ["--grep", names]
        return Invocation(argv, env=mocha_hook_env(report), report=report, name_filter=names)

    def custom_invocation(self, command: str, run_dir: Path, report_dir: Path) -> Invocation:
        report = report_dir / "mocha-events.jsonl"
        return Invocation(["/bin/sh", "-c", command], env=mocha_hook_env(report), report=report)

    def parse(self, report: str | None, output: str) -> ParsedRun:
        return parse_mocha_run(report, output)

    def runner_error(self, output: str, exit_code: int | None) -> TestFailure:
        required = re.search(r"Require stack:\n- (\S+)|imported from (\S+)", output)
        file = (required.group(1) or required.group(2)) if required else None
        return make_failure(
            f"mocha: {file or 'run'} failed to load" if file else "mocha: run failed", file=file,
            message=run_failure_message(output, exit_code), detail=output[-8000:],
        )  # fmt: skip


# mocha's options that take a value (the word after them is not a spec path)
_MOCHA_VALUED = {
    "-u", "--ui", "-r", "--require", "-R", "--reporter", "-O", "--reporter-option", "--reporter-options", "-t",
    "--timeout", "-s", "--slow", "-g", "--grep", "-f", "--fgrep", "--config", "--package", "--extension",
    "--file", "--ignore", "--exclude", "-n", "--node-option", "--spec", "-j", "--jobs", "--retries",
}  # fmt: skip
_MOCHA_DROPPED = {"--spec", "-w", "--watch", "--watch-files", "--watch-ignore"}  # replaced by the targets / never
_MOCHA_GREP = {"-g", "--grep", "-f", "--fgrep", "-i", "--invert"}


def mocha_options(arguments: list[str], keep_grep: bool) -> list[str]:
    """The options of a mocha command line without its spec paths (and without its own grep when ours is
    given): what a targeted run keeps of the project's invocation."""
    kept: list[str] = []
    i = 0
    while i < len(arguments):
        word = arguments[i]
        if not word.startswith("-"):  # a spec path or glob
            i += 1
            continue
        name = word.split("=", 1)[0]
        takes_value = name in _MOCHA_VALUED and "=" not in word and i + 1 < len(arguments)
        group = arguments[i : i + 2] if takes_value else [word]
        if name not in _MOCHA_DROPPED and (keep_grep or name not in _MOCHA_GREP):
            kept += group
        i += len(group)
    return kept


MOCHA_HOOK = Path(__file__).resolve().parent.parent / "mocha_hook.js"
MOCHA_EVENTS_ENV = "GRAPHLEMON_MOCHA_EVENTS"


def mocha_hook_env(report: Path) -> dict[str, str]:
    """NODE_OPTIONS that preload our mocha event hook in every node process of the run (inert elsewhere)."""
    hook = str(MOCHA_HOOK)
    require = f'--require "{hook}"' if " " in hook else f"--require {hook}"
    options = " ".join(p for p in (os.environ.get("NODE_OPTIONS", ""), require) if p)
    return {"NODE_OPTIONS": options, MOCHA_EVENTS_ENV: str(report)}


def parse_mocha_run(report: str | None, output: str) -> ParsedRun:
    """The hook's events, else a JSON report printed on stdout, else the spec text; the closing
    `N passing / N failing / N pending` lines are mocha's own totals (for reconciliation)."""
    parsed = parse_mocha_events(report) if report else ParsedRun()
    if not parsed.found:
        parsed = _stdout_json(output)
    if not parsed.found:
        parsed = parse_mocha_text(output)
    text_counts = mocha_text_counts(output)
    if text_counts is not None:
        parsed.summary_counts, parsed.summary_label = text_counts, "mocha's closing summary (N passing / failing)"
    return parsed


def _stdout_json(output: str) -> ParsedRun:
    """mocha's JSON reporter written to stdout: the object that holds `stats` and `tests`."""
    start = output.find('{\n  "stats"')
    if start < 0:
        return ParsedRun()
    end = output.rfind("\n}")
    return parse_mocha_json(output[start : end + 2]) if end > start else ParsedRun()


def _failed_case(failure: TestFailure) -> TestCase:
    return TestCase(name=failure.name, file=failure.file, line=failure.line, status="failed")
