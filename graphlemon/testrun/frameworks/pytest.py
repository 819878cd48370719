"""pytest: our plugin (loaded through PYTEST_PLUGINS) writes JSON lines; the human output is the fallback."""

from __future__ import annotations

import os
import re
from pathlib import Path

from ...errors import invalid_param
from ..parsers.common import error_summary, make_failure
from ..parsers.pytest_report import parse_pytest_report
from ..parsers.pytest_text import parse_pytest_text
from ..python_env import python_for
from ..result_models import ParsedRun, TestFailure
from .framework import Framework, Invocation, RunRequest

PLUGIN_DIR = Path(__file__).resolve().parent.parent / "plugins"
PLUGIN_MODULE = "graphlemon_pytest_report"
REPORT_ENV = "GRAPHLEMON_PYTEST_REPORT"
_K_PATTERN = re.compile(r"^[\w:+\-.\[\]\\/]+$")
# pytest could not import a PYTEST_PLUGINS module (`Error importing plugin "x": No module named 'x'`)
_PLUGIN_NOT_IMPORTED = re.compile(
    rf"""Error importing plugin ["']{PLUGIN_MODULE}["']|No module named ["']{PLUGIN_MODULE}["']"""
)
_CONFTEST_ERROR = re.compile(r"^(?:ImportError while loading conftest|INTERNALERROR|ERROR: ).*", re.M)


class Pytest(Framework):
    name = "pytest"
    no_tests_pattern = re.compile(r"^(?:=+ )?no tests ran\b|^collected 0 items", re.M)

    def invocation(self, request: RunRequest) -> Invocation:
        # collection errors become failures while the other files still run
        args = [python_for(request.run_dir), "-m", "pytest", "--continue-on-collection-errors"]
        args += request.rerun or request.targets.paths
        if request.targets.patterns:
            args += ["-k", " or ".join(_k_term(p) for p in request.targets.patterns)]
        return self._with_plugin(args, request.report_dir)

    def custom_invocation(self, command: str, run_dir: Path, report_dir: Path) -> Invocation:
        return self._with_plugin(["/bin/sh", "-c", command], report_dir)

    def parse(self, report: str | None, output: str) -> ParsedRun:
        parsed = parse_pytest_report(report) if report else ParsedRun()
        if parsed.found:
            return parsed
        text = parse_pytest_text(output)
        text.running = parsed.running
        return text

    def no_tests(self, output: str, exit_code: int | None) -> bool:
        return exit_code == 5 or super().no_tests(output, exit_code)

    def runner_error(self, output: str, exit_code: int | None) -> TestFailure:
        conftest = re.search(r"ImportError while loading conftest '([^']+)'", output)
        if conftest:
            text = output[conftest.start() :]
            line = re.search(r"^\S*conftest\.py:(\d+): in <module>", text, re.M)
            return make_failure(
                "pytest: conftest failed to load", file=conftest.group(1), line=int(line.group(1)) if line else None,
                message="conftest failed to load: " + error_summary(text), detail=text,
            )  # fmt: skip
        match = _CONFTEST_ERROR.search(output)
        start = match.start() if match else max(0, len(output) - 8000)
        return make_failure("pytest: run failed", message=error_summary(output[start:]) or f"pytest exited with code {exit_code}",
                            detail=output[start:])  # fmt: skip

    def without_report(self, invocation: Invocation, report: str | None, output: str) -> Invocation | None:
        """The command set PYTHONPATH itself (`PYTHONPATH=src python -m pytest`) and so hid the plugin: pytest stopped
        at importing it, before any test. The same command without the plugin is read from pytest's own output."""
        if report or invocation.report is None or not _PLUGIN_NOT_IMPORTED.search(output):
            return None
        env = {k: v for k, v in invocation.env.items() if k not in ("PYTEST_PLUGINS", REPORT_ENV)}
        if os.environ.get("PYTEST_PLUGINS"):
            env["PYTEST_PLUGINS"] = os.environ["PYTEST_PLUGINS"]
        return Invocation(invocation.argv, env=env)

    def _with_plugin(self, argv: list[str], report_dir: Path) -> Invocation:
        report = report_dir / "pytest-report.jsonl"
        pythonpath = os.pathsep.join(p for p in (str(PLUGIN_DIR), os.environ.get("PYTHONPATH", "")) if p)
        plugins = ",".join(p for p in (os.environ.get("PYTEST_PLUGINS", ""), PLUGIN_MODULE) if p)
        env = {"PYTHONPATH": pythonpath, "PYTEST_PLUGINS": plugins, REPORT_ENV: str(report)}
        return Invocation(argv, env=env, report=report)


def _k_term(pattern: str) -> str:
    if not _K_PATTERN.match(pattern) or pattern in {"and", "or", "not"}:
        raise invalid_param(
            f"pytest name pattern {pattern!r} cannot be a -k term (letters, digits and _:+-.[]\\/ only); "
            "select the test by its node id (file::name) instead",
            target=pattern,
        )
    return pattern
