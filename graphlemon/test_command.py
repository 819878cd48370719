"""`graphlemon test … --json` without the full command line: argparse instead of typer, no rich, and
pydantic's plugin discovery skipped for graphlemon's own models. The loop calls it on every attempt,
so its fixed cost is most of the overhead on a short suite (docs/testrun.md, bench_testrun.py).

Same options, checks, exit codes and error lines as the typer command (`graphlemon.cli.test_cmd`), which
still serves `--help` and the table output. With `--json` stdout holds exactly the JSON object: whatever
else writes to stdout while the tests run (a library's warning) goes to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import math
import os
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

MAX_TIMEOUT = 86_400.0


def wants_lean(args: list[str]) -> bool:
    """`test` with `--json` and no help: the lean path; anything else goes to the full command line."""
    return args[:1] == ["test"] and "--json" in args and not {"-h", "--help"} & set(args)


def main(args: list[str]) -> None:
    logging.basicConfig(level=logging.WARNING, format="%(message)s", stream=sys.stderr)
    try:
        options = _parse(args[1:])
        with _pydantic_plugins_skipped():
            from .errors import GraphLemonError
            from .testrun import run_tests
        cancel = threading.Event()
        try:
            with forward_signals(cancel), json_only_stdout() as stdout:
                result = run_tests(
                    options.project, options.targets, framework=options.framework,
                    last_failed=options.last_failed, command=options.command, timeout=options.timeout, cancel=cancel,
                )  # fmt: skip
                stdout.write(result.contract_json() + "\n")
        except GraphLemonError as exc:
            _fail(exc.code, exc.message, exc.exit_code)
        except OSError as exc:
            where = f"{exc.filename}: " if exc.filename else ""
            _fail("IO_ERROR", f"{where}{exc.strerror or exc}", 1)
    except _UsageError as exc:
        _fail("INVALID_PARAM", str(exc), 2)
    sys.exit(0 if result.ok else 1)


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]  # a usage error is ours, exit 2
        raise _UsageError(message)


def _parse(args: list[str]) -> argparse.Namespace:
    parser = _Parser(prog="graphlemon test", add_help=False)
    parser.add_argument("targets", nargs="*")
    parser.add_argument("--project", "-p", type=Path, default=Path("."))
    parser.add_argument("--framework")
    parser.add_argument("--last-failed", action="store_true")
    parser.add_argument("--command")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_intermixed_args(args)
    if not (math.isfinite(options.timeout) and 0 < options.timeout <= MAX_TIMEOUT):
        raise _UsageError(f"Invalid value for '--timeout': must be a number of seconds above 0 and at most "
                          f"{MAX_TIMEOUT:g}, got {options.timeout}")  # fmt: skip
    return options


@contextlib.contextmanager
def json_only_stdout() -> Iterator[object]:
    """Yield the real stdout and send everything else written to stdout meanwhile to stderr."""
    real = sys.stdout
    with contextlib.redirect_stdout(sys.stderr):
        yield real
    real.flush()


@contextlib.contextmanager
def forward_signals(cancel: threading.Event) -> Iterator[None]:
    """SIGINT / SIGTERM set `cancel` (the runner then kills the test process group)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    for sig in previous:
        signal.signal(sig, lambda _signum, _frame: cancel.set())
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def _pydantic_plugins_skipped() -> Iterator[None]:
    """Build graphlemon's models without pydantic scanning every installed package for plugins (a tenth of a
    second); the variable is put back so the tests' own processes see the environment as it was."""
    key = "PYDANTIC_DISABLE_PLUGINS"
    before = os.environ.get(key)
    os.environ[key] = "__all__"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = before


def _fail(code: str, message: str, exit_code: int) -> None:
    print(f"error[{code}]: {message}", file=sys.stderr)
    sys.exit(exit_code)
