"""`run_tests`: detect, run, parse, reconcile with the exit code, add hints, remember failures."""

from __future__ import annotations

import logging
import math
import os
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path

from .. import beneath
from ..errors import ErrorCode, GraphLemonError, invalid_param
from ..scratch import scratch_dir
from .confine import RESOURCE_LIMIT, Confinement, judge_outcome, wrap
from .detect import detect_framework, normalise_framework
from .environment import run_env
from .frameworks import Framework, Invocation, RunRequest, framework_of_command, get_framework
from .frameworks.framework import selector_file
from .lastfailed import LastFailedStore
from .output_text import TAIL_CHARS, head_and_tail, strip_ansi
from .process import ProcessOutcome, run_process
from .reconcile import reconcile
from .result_models import FrameworkName, ParsedRun, TestRunResult
from .targets import Targets, split_targets
from .value_window import shorten_values

log = logging.getLogger(__name__)
MAX_TIMEOUT = 24 * 3600.0
MAX_OUTPUT_BYTES = 64 * 1024 * 1024  # parsed from the head and the tail beyond this
MAX_REPORT_BYTES = 256 * 1024 * 1024
OUTPUT_LOG = "output.log"


def run_tests(
    project_dir: Path,
    targets: Sequence[str] = (),
    *,
    framework: str | None = None,
    last_failed: bool = False,
    command: str | None = None,
    timeout: float = 120.0,
    env: Mapping[str, str] | None = None,
    cancel: threading.Event | None = None,
    tail_chars: int = TAIL_CHARS,
    confinement: Confinement | None = None,
) -> TestRunResult:
    """Run a project's tests in one call and return the structured summary.

    `targets`: files, folders, node ids or name patterns. `framework`: override
    detection. `last_failed`: rerun what failed last time (everything when nothing
    did). `command`: run this shell command as given, parsed when the framework is
    known. `env`: added to the child's environment (inherited secrets are removed).
    `cancel`: set it to stop the run; the process group is killed, partial results kept.
    `confinement`: run inside a bubblewrap sandbox (agent-written tests; see confine.py).
    """
    root = _project_root(project_dir)
    _check_limits(timeout, command, tail_chars, env)
    targets = () if targets is None else targets
    if command is not None and (targets or last_failed):
        raise invalid_param("--command runs as given: put the targets in the command (no targets or --last-failed)")
    name: FrameworkName | None = normalise_framework(framework) if framework else None
    if command is not None:
        name = name or framework_of_command(command)
        run_dir = root
    else:
        name, run_dir = detect_framework(root, name)
    variant = get_framework(name) if name else None
    wanted = split_targets(targets, root, run_dir)
    store = LastFailedStore(root)
    run_key = os.path.relpath(run_dir, root)
    with scratch_dir() as tmp:  # named after this pid: a killed run's folder is swept later
        report_dir = Path(tmp)
        invocation = _invocation(variant, command, wanted, run_dir, report_dir, store, name, run_key, last_failed)
        refused: list[str] = []  # what the run left in its scratch folder that the host would not follow
        run = partial(_run, run_dir=run_dir, report_dir=report_dir, refused=refused, timeout=timeout, cancel=cancel,
                      env=env, confinement=confinement)  # fmt: skip
        outcome, output, report, confined = run(invocation)
        plain = variant.without_report(invocation, report, output) if variant is not None else None
        if plain is not None:  # what writes the report could not load and nothing ran: again, read from the output
            invocation = replace(plain, name_filter=invocation.name_filter)
            (report_dir / OUTPUT_LOG).unlink(missing_ok=True)  # a link the first run left is not written through
            outcome, output, report, confined = run(invocation)
    if variant is not None:
        output = variant.human_output(report, output)
    parsed = _drop_filtered(_parse(variant, report, output), invocation.name_filter)
    result = reconcile(
        parsed, outcome, variant, output, framework=name,
        command=command if command is not None else invocation.display, timeout=timeout,
    )  # fmt: skip
    _relativise(result, root, run_dir)
    if plain is not None:
        result.warnings.append(f"{name}'s report plugin could not be imported (the command sets PYTHONPATH?): the "
                               "run was repeated without it and read from the runner's printed output")  # fmt: skip
    if result.failures:  # the hint rules (dozens of patterns) are loaded only for a run with failures
        from .go_source import settle_go_location
        from .hints import hint_for
        from .js_source import settle_node_sides

        rules = variant.hint_rules() if variant is not None else ()
        for failure in result.failures:
            settle_node_sides(failure, root)  # node's argument positions, when the test's call shows the sides
            settle_go_location(failure, root)  # a Go test's first failing check, not a t.Log line above it
            hint = hint_for(failure, root, rules)  # on the whole values
            failure.hint, failure.hint_confidence = hint.text, hint.confidence
            shorten_values(failure)
    result.output_tail = head_and_tail(output + _marker(outcome, timeout), tail_chars)
    result.confinement = confined
    if refused:  # a planted link or FIFO: the run's own files were not read, so nothing it says counts
        result.refused_reads = refused
        result.warnings += refused
        result.crashed, result.ok = True, False
    result.crashed = result.crashed or f"] {RESOURCE_LIMIT}:" in output  # a limit stopped it: infra, not the code
    if name and outcome.start_error is None:
        store.record(name, run_key, result.cases)
    return result


def _run(  # fmt: skip
    invocation: Invocation, *, run_dir: Path, report_dir: Path, refused: list[str], timeout: float,
    cancel: threading.Event | None, env: Mapping[str, str] | None, confinement: Confinement | None,
) -> tuple[ProcessOutcome, str, str | None, bool]:
    """Run one invocation: (its outcome, its output, its report, whether it ran confined)."""
    argv, confined = wrap(invocation.argv, confinement, cwd=run_dir, writable=[report_dir])
    outcome = run_process(
        argv, cwd=run_dir, env=run_env({**invocation.env, **(env or {})}, confinement, confined),
        output_path=report_dir / OUTPUT_LOG, timeout=timeout, cancel=cancel,
        stdout_path=invocation.report if invocation.stdout_is_report else None,
    )  # fmt: skip
    outcome, output = judge_outcome(outcome, _read_output(report_dir, refused), confined)
    return outcome, output, _read_report(report_dir, invocation.report, refused), confined


def _project_root(project_dir: Path | str) -> Path:
    if not isinstance(project_dir, Path | str) or not str(project_dir).strip() or "\x00" in str(project_dir):
        raise GraphLemonError(ErrorCode.PROJECT_NOT_FOUND, f"no project folder given ({project_dir!r})")
    root = Path(project_dir).expanduser()
    if not root.is_dir():
        raise GraphLemonError(ErrorCode.PROJECT_NOT_FOUND, f"project folder not found: {root}", project=str(root))
    return root.resolve()


def _check_limits(timeout: float, command: str | None, tail_chars: int, env: Mapping[str, str] | None) -> None:
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not math.isfinite(timeout)
        or not 0 < timeout <= MAX_TIMEOUT
    ):
        raise invalid_param(f"timeout must be a number of seconds in (0, {MAX_TIMEOUT:.0f}], got {timeout!r}")
    if command is not None and (not isinstance(command, str) or not command.strip() or "\x00" in command):
        raise invalid_param("--command must be a non-empty shell command")
    for key, value in (env or {}).items():
        if not isinstance(key, str) or not key or "=" in key or "\x00" in key or "\x00" in str(value):
            raise invalid_param(f"env: invalid variable {key!r} (a non-empty name without '=' or NUL)")
    if isinstance(tail_chars, bool) or not isinstance(tail_chars, int) or tail_chars < 0:
        raise invalid_param(f"tail_chars must be a non-negative int, got {tail_chars!r}")


def _invocation(
    variant: Framework | None, command: str | None, wanted: Targets, run_dir: Path, report_dir: Path,
    store: LastFailedStore, name: FrameworkName | None, run_key: str, last_failed: bool,
) -> Invocation:  # fmt: skip
    if command is not None:
        if variant is None:
            return Invocation(["/bin/sh", "-c", command])
        return variant.custom_invocation(command, run_dir, report_dir)
    assert variant is not None and name is not None
    rerun = _rerun_selection(store.failed(name, run_key), wanted) if last_failed else []
    return variant.invocation(RunRequest(run_dir=run_dir, report_dir=report_dir, targets=wanted, rerun=rerun))


def _rerun_selection(failed: list[str], wanted: Targets) -> list[str]:
    """The last failures, restricted to the path targets when some are given."""
    if not wanted.paths:
        return failed
    prefixes = [p.split("::")[0].rstrip("/") for p in wanted.paths]
    return [
        s
        for s in failed
        if any(selector_file(s) == p or selector_file(s).startswith(p + "/") or p == "." for p in prefixes)
    ]


def _read_output(report_dir: Path, refused: list[str]) -> str:
    """The run's captured output (beyond MAX_OUTPUT_BYTES its head and tail), through the safe reader: the run could
    replace the file with a link or a FIFO."""
    try:
        data = beneath.read_head_tail(report_dir, OUTPUT_LOG, max_bytes=MAX_OUTPUT_BYTES, cut=b"\n[... output cut ...]\n")
    except GraphLemonError as exc:
        refused.append(exc.message)
        return ""
    except OSError:
        return ""
    return strip_ansi(data.decode("utf-8", errors="replace"))


def _read_report(report_dir: Path, path: Path | None, refused: list[str]) -> str | None:
    """The report's text (in the run's scratch folder); beyond MAX_REPORT_BYTES only its start (a report that size
    is not parsed whole)."""
    if path is None:
        return None
    try:
        data = beneath.read_bytes(report_dir, path, max_bytes=MAX_REPORT_BYTES, truncate=True)
    except GraphLemonError as exc:
        if beneath.is_refusal(exc):
            refused.append(exc.message)
        return None
    except OSError:
        return None
    return data.decode("utf-8", errors="replace")


def _parse(variant: Framework | None, report: str | None, output: str) -> ParsedRun:
    if variant is None:
        from .parsers.generic import parse_any_text

        return parse_any_text(output)
    try:
        return variant.parse(report, output)
    except Exception:  # a parser bug must not lose the run: degrade to exit code + tail, loudly
        log.exception("the %s parser failed; falling back to exit code and output tail", variant.name)
        return ParsedRun()


def _drop_filtered(parsed: ParsedRun, name_filter: str | None) -> ParsedRun:
    """Drop the tests a name filter left out (vitest, jest and node report them as skipped)."""
    if not name_filter:
        return parsed
    try:
        wanted = re.compile(name_filter)
    except re.error:
        return parsed
    parsed.cases = [
        c for c in parsed.cases
        if c.status != "skipped" or c.selector is None or wanted.search(c.selector.partition("\t")[2] or c.name)
    ]  # fmt: skip
    return parsed


def _relativise(result: TestRunResult, root: Path, run_dir: Path) -> None:
    """File paths relative to the project root (selectors: to the run folder), whatever the framework printed."""
    seen: dict[str, str] = {}
    for item in (*result.failures, *result.cases):
        if item.file:
            relative = seen.get(item.file) or seen.setdefault(item.file, _relative_file(item.file, root, run_dir))
            if item.name == item.file:  # a file-level failure is named after its file
                item.name = relative
            item.file = relative
    for case in result.cases:
        if case.selector and "\t" in case.selector:
            file, _, name = case.selector.partition("\t")
            if file and Path(file).is_absolute():
                local = _relative_file(file, run_dir, run_dir)
                case.selector = f"{local}\t{name if name != file else local}"


def _relative_file(file: str, root: Path, run_dir: Path) -> str:
    path = Path(file.removeprefix("file://"))
    absolute = path if path.is_absolute() else run_dir / path
    try:
        return os.path.relpath(absolute, root) if absolute.resolve().is_relative_to(root) else file
    except (OSError, ValueError):
        return file


def _marker(outcome: ProcessOutcome, timeout: float) -> str:
    if outcome.start_error:
        return f"\n[graphlemon: could not start the command: {outcome.start_error}]"
    if outcome.timed_out:
        return f"\n[graphlemon: timed out after {timeout:g} s; the process group was killed]"
    if outcome.cancelled:
        return "\n[graphlemon: cancelled; the process group was killed]"
    return ""
