"""`graphlemon test [TARGET ...]`: run a project's tests, print a compact structured result."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Annotated

import typer

from ._common import JsonOpt, console, line, seconds


def register(app: typer.Typer) -> None:
    @app.command("test")
    def test(
        targets: Annotated[
            list[str] | None,
            typer.Argument(help="Files, folders, pytest node ids or test-name patterns (default: the whole suite)."),
        ] = None,
        project: Annotated[
            Path, typer.Option("--project", "-p", help="Project folder (need not be a GraphLemon project).")
        ] = Path("."),
        framework: Annotated[
            str | None,
            typer.Option(
                help="pytest, vitest, jest, mocha, node (node:test), npm-test, go or cargo; default: detected."
            ),
        ] = None,
        last_failed: Annotated[
            bool, typer.Option("--last-failed", help="Rerun only what failed last time (everything if nothing did).")
        ] = False,
        command: Annotated[
            str | None, typer.Option(help="Shell command to run as given instead of the framework's own.")
        ] = None,
        timeout: Annotated[
            float, typer.Option(callback=seconds(86_400), help="Seconds before the whole process group is killed.")
        ] = 120.0,
        as_json: JsonOpt = False,
    ) -> None:
        """Run the tests in one call: counts, each failure with location, expected/got and a hint.

        Exit 0 when ok, 1 when not, 2 for bad input. SIGINT/SIGTERM stop the
        test run (its whole process group) and still print the partial result.
        """
        from ..test_command import forward_signals, json_only_stdout
        from ..testrun import run_tests

        cancel = threading.Event()
        with forward_signals(cancel), json_only_stdout() as stdout:
            result = run_tests(
                project, targets or (), framework=framework, last_failed=last_failed,
                command=command, timeout=timeout, cancel=cancel,
            )  # fmt: skip
        if as_json:  # one compact JSON object: exactly the contract (cases and details are excluded)
            stdout.write(result.contract_json() + "\n")
        else:
            _print_result(result)
        raise typer.Exit(0 if result.ok else 1)


def _print_result(result) -> None:
    from rich.table import Table

    out = console()
    s = result.summary
    verdict = ("ok", "green") if result.ok else ("NOT ok", "red")
    flags = [
        (f"  {flag}", "yellow")
        for flag, on in (("timed out", result.timed_out), ("crashed", result.crashed), ("unparsed", result.unparsed))
        if on
    ]
    out.print(
        line(
            verdict,
            f"  {result.framework or 'unknown framework'}  exit {result.exit_code}  {result.duration_ms} ms",
            *flags,
        )
    )
    out.print(f"{s.total} tests: {s.passed} passed, {s.failed} failed, {s.skipped} skipped")
    if result.subtests is not None:
        out.print(f"subtests: {result.subtests.passed} passed, {result.subtests.failed} failed")
    for warning in result.warnings:
        out.print(line(("warning: ", "yellow"), warning))
    out.print(line((f"$ {result.command}", "dim")))
    if result.failures:
        table = Table(title=f"{len(result.failures)} failure(s)", show_lines=True)
        for column in ("test", "where", "message", "hint"):
            table.add_column(column, overflow="fold")
        for f in result.failures:
            where = f"{f.file}:{f.line}" if f.file and f.line else (f.file or "-")
            message = f.message if f.expected is None else f"{f.message}\nexpected: {f.expected}\ngot: {f.got}"
            name = f"{f.name} {f.subtest}" if f.subtest else f.name
            table.add_row(name, where, message, f.hint)
        out.print(table)
    if result.crashed or (not result.ok and not result.failures):
        out.print(line(("output tail", "bold")))
        out.print(result.output_tail, highlight=False)
