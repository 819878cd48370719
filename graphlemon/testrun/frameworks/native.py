"""go test (`-json` on stdout is the report) and cargo test (libtest's output is the report)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from ... import beneath
from ...errors import GraphLemonError, invalid_param
from ..output_text import strip_ansi
from ..parsers.cargo_text import compile_failure, parse_cargo_text
from ..parsers.go_json import human_text, parse_go_json
from ..parsers.go_text import parse_go_text
from ..parsers.js_common import name_regex
from ..result_models import ParsedRun, TestFailure
from .framework import Framework, Invocation, RunRequest, file_and_name


class GoTest(Framework):
    name = "go"
    no_tests_pattern = re.compile(r"no test files|no packages to test|matched no packages", re.I)

    def __init__(self) -> None:
        self.module: str | None = None

    def invocation(self, request: RunRequest) -> Invocation:
        self.module = _go_module(request.run_dir)
        report = request.report_dir / "go-test.jsonl"
        packages, names = self._selection(request)
        argv = ["go", "test", "-json", *packages]
        if names:
            argv += ["-run", names]
        return Invocation(argv, report=report, stdout_is_report=True)

    def custom_invocation(self, command: str, run_dir: Path, report_dir: Path) -> Invocation:
        self.module = _go_module(run_dir)
        return super().custom_invocation(command, run_dir, report_dir)

    def human_output(self, report: str | None, output: str) -> str:
        return strip_ansi(human_text(report)) + output if report else output

    def hint_rules(self) -> tuple[Callable[..., str | None], ...]:
        from .native_hints import GO_RULES

        return GO_RULES

    def parse(self, report: str | None, output: str) -> ParsedRun:
        parsed = parse_go_json(report, output, self.module) if report else ParsedRun()
        if parsed.found or parsed.running:
            return parsed
        from_output = parse_go_json(output, output, self.module)  # a custom `go test -json` writes to the output
        return from_output if from_output.found else parse_go_text(output, self.module)

    def _selection(self, request: RunRequest) -> tuple[list[str], str | None]:
        if request.rerun:
            folders = [file_and_name(s)[0] for s in request.rerun]
            tops = [file_and_name(s)[1].split("/")[0] for s in request.rerun]
            packages = [_package_arg(f) for f in dict.fromkeys(folders)]
            return packages, None if not all(tops) else name_regex(list(dict.fromkeys(tops)), anchored=True)
        packages, names = [], []
        for target in request.targets.patterns:
            (packages if target.endswith("/...") or target.startswith("./") else names).append(target)
        for path in request.targets.paths:
            folder = path if not path.endswith(".go") else str(Path(path).parent)
            packages.append(_package_arg(folder))
        return list(dict.fromkeys(packages)) or ["./..."], name_regex(names, anchored=False) if names else None


class CargoTest(Framework):
    name = "cargo"
    no_tests_pattern = re.compile(r"no test target|no library targets found", re.I)

    def hint_rules(self) -> tuple[Callable[..., str | None], ...]:
        from .native_hints import CARGO_RULES

        return CARGO_RULES

    def invocation(self, request: RunRequest) -> Invocation:
        argv = ["cargo", "test", "--no-fail-fast"]
        filters: list[str] = []
        if request.rerun:
            names = [file_and_name(s)[1] or s for s in request.rerun]
            return Invocation([*argv, "--", "--exact", *dict.fromkeys(names)], env=_CARGO_ENV)
        for path in request.targets.paths:
            target = Path(path)
            if target.parent.name != "tests" or target.suffix != ".rs":
                raise invalid_param(
                    f"cargo selects tests by name, or an integration test file tests/NAME.rs; not {path!r}", target=path
                )
            argv += ["--test", target.stem]
        filters = list(request.targets.patterns)
        return Invocation([*argv, *(["--", *filters] if filters else [])], env=_CARGO_ENV)

    def parse(self, report: str | None, output: str) -> ParsedRun:
        return parse_cargo_text(output)

    def runner_error(self, output: str, exit_code: int | None) -> TestFailure:
        return compile_failure(output) or super().runner_error(output, exit_code)


_CARGO_ENV = {"CARGO_TERM_COLOR": "never", "RUST_BACKTRACE": "0"}


def _go_module(run_dir: Path) -> str | None:
    try:
        text = beneath.read_text(run_dir, "go.mod", errors="replace", max_bytes=1024 * 1024)  # never a link or FIFO
    except (OSError, GraphLemonError):
        return None
    match = re.search(r"^module\s+(\S+)", text, re.M)
    return match.group(1).strip('"') if match else None


def _package_arg(folder: str) -> str:
    if folder in ("", "."):
        return "."
    return folder if folder.startswith(("./", "../", "/")) else f"./{folder}"
