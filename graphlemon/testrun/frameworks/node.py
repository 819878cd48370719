"""node:test (our reporter writes JSON lines; spec on stdout for people) and `npm test` (text only)."""

from __future__ import annotations

import re
from pathlib import Path

from ...errors import invalid_param
from ..npm_scripts import script_of_command, script_runners
from ..parsers.generic import parse_any_text
from ..parsers.js_common import name_regex
from ..parsers.node_events import parse_node_events
from ..parsers.node_text import parse_node_text
from ..parsers.tap import has_tap, parse_tap
from ..result_models import ParsedRun
from .framework import Framework, Invocation, RunRequest, file_and_name
from .js import mocha_hook_env, parse_mocha_run

REPORTER = Path(__file__).resolve().parent.parent / "node_reporter.js"


class NodeTest(Framework):
    name = "node"

    def invocation(self, request: RunRequest) -> Invocation:
        report = request.report_dir / "node-events.jsonl"
        paths, pattern = self._selection(request)
        argv = ["node", "--test", f"--test-reporter={REPORTER}", f"--test-reporter-destination={report}",
                "--test-reporter=spec", "--test-reporter-destination=stdout"]  # fmt: skip
        if pattern:
            argv.append(f"--test-name-pattern={pattern}")
        return Invocation([*argv, *paths], report=report)

    def parse(self, report: str | None, output: str) -> ParsedRun:
        parsed = parse_node_events(report) if report else ParsedRun()
        if parsed.found:
            return parsed
        text = parse_node_text(output)
        text.running = parsed.running
        return text

    def no_tests(self, output: str, exit_code: int | None) -> bool:
        return re.search(r"^(?:ℹ|#) tests 0$", output, re.M) is not None

    @staticmethod
    def _selection(request: RunRequest) -> tuple[list[str], str | None]:
        """Node matches the pattern per test (suites are always entered; a parent test must match itself)."""
        if not request.rerun:
            patterns = request.targets.patterns
            return list(request.targets.paths), name_regex(patterns, anchored=False) if patterns else None
        files: list[str] = []
        names: list[str] = []
        whole_file = False
        for selector in request.rerun:
            file, full = file_and_name(selector)
            files.append(file)
            if not full or full == file:
                whole_file = True
            names.extend(full.split(" > "))
        paths = list(dict.fromkeys(f for f in files if f))
        return paths, None if whole_file else name_regex(list(dict.fromkeys(names)), anchored=True)


class NpmTest(Framework):
    """`npm test` / `npm run NAME`: what the project's script runs, as it runs it.

    The parser follows the runner the script actually starts (its `npm run` chain resolved):
    mocha's runner events through our preloaded hook, TAP (tape, tap, node:test), then the other
    text parsers. A step that fails before any test ran (a lint step) is a failure of the run.
    """

    name = "npm-test"

    def __init__(self) -> None:
        self.runners: list[str] = []

    def invocation(self, request: RunRequest) -> Invocation:
        if request.targets.patterns:
            raise invalid_param(
                "npm-test cannot select tests by name (the script decides its runner); pass files, "
                "or use --framework / --command with the runner's own filter",
                patterns=request.targets.patterns,
            )
        self.runners = script_runners(request.run_dir, "test")
        paths = (
            list(dict.fromkeys(file_and_name(s)[0] for s in request.rerun)) if request.rerun else request.targets.paths
        )
        paths = [p for p in paths if p]
        report = request.report_dir / "mocha-events.jsonl"
        argv = ["npm", "test", *(["--", *paths] if paths else [])]
        return Invocation(argv, env=mocha_hook_env(report), report=report)

    def custom_invocation(self, command: str, run_dir: Path, report_dir: Path) -> Invocation:
        script = script_of_command(command)
        self.runners = script_runners(run_dir, script) if script else []
        report = report_dir / "mocha-events.jsonl"
        return Invocation(["/bin/sh", "-c", command], env=mocha_hook_env(report), report=report)

    def parse(self, report: str | None, output: str) -> ParsedRun:
        if "mocha" in self.runners or report:
            parsed = parse_mocha_run(report, output)
            if parsed.found:
                return parsed
        # node:test's TAP nests subtests, which its own parser reads; tape and tap print flat TAP
        if has_tap(output) and ({"tape", "tap"} & set(self.runners) or not self.runners):
            parsed = parse_tap(output)
            if parsed.found:
                return parsed
        return parse_any_text(output, prefer=self.runners)

    def no_tests(self, output: str, exit_code: int | None) -> bool:
        return "Missing script" in output
