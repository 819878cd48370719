"""The `graphlemon` command line: a thin typer app over the domain.

Commands import their domain modules lazily and Prefect only where they
orchestrate, so `--help`, `init` and `bugs` answer in well under a second.
Errors print `error[CODE]: message` on stderr; exit 2 for bad input, 1 for a
failed operation.
"""

from __future__ import annotations

import logging
import sys

import typer
from pydantic import ValidationError
from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError  # typer vendors click

from ..errors import ErrorCode, GraphLemonError, permission_denied

SETTINGS = dict(
    name="graphlemon",
    help="GraphLemon: an autonomous, auditable development loop on a real git repository.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
_APPS: dict[str, typer.Typer] = {}


def full_app() -> typer.Typer:
    """Every command (built once)."""
    if "full" not in _APPS:
        from . import (
            agent,
            budget,
            bugs,
            console_cmd,
            demo_cmd,
            deploy_cmd,
            doctor_cmd,
            gc_cmd,
            init_cmd,
            logs_cmd,
            report,
            run,
            serve_cmd,
            server_cmd,
            skills_cmd,
            sql,
            status,
            stop_cmd,
            test_cmd,
            tester,
            triage,
        )

        app = typer.Typer(**SETTINGS)
        init_cmd.register(app)
        run.register(app)
        status.register(app)
        stop_cmd.register(app)
        test_cmd.register(app)
        triage.register(app)
        app.add_typer(bugs.app, name="bugs")
        app.add_typer(budget.app, name="budget")
        app.add_typer(agent.app, name="agent")
        app.add_typer(tester.app, name="tester")
        app.add_typer(report.app, name="report")
        app.add_typer(skills_cmd.app, name="skills")
        app.add_typer(logs_cmd.app, name="logs")
        sql.register(app)
        gc_cmd.register(app)
        console_cmd.register(app)
        demo_cmd.register(app, main)
        serve_cmd.register(app)
        app.add_typer(deploy_cmd.app, name="deploy")
        app.add_typer(doctor_cmd.app, name="doctor")
        app.add_typer(server_cmd.app, name="server")
        _APPS["full"] = app
    return _APPS["full"]


def lean_test_app() -> typer.Typer:
    """`graphlemon test …`, which the loop calls on every attempt: the same command on an app that holds only
    it, so no other command's modules are imported or built (about half of the CLI's start-up)."""
    if "test" not in _APPS:
        from . import test_cmd

        app = typer.Typer(**SETTINGS)
        app.callback()(_no_options)  # a group, so `test` stays a subcommand name as in the full app
        test_cmd.register(app)
        _APPS["test"] = app
    return _APPS["test"]


def _no_options() -> None:
    """GraphLemon: an autonomous, auditable development loop on a real git repository."""


def __getattr__(name: str) -> typer.Typer:  # `from graphlemon.cli import app`: every command
    if name == "app":
        return full_app()
    raise AttributeError(name)


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(level=logging.WARNING, format="%(message)s", stream=sys.stderr)
    try:
        args = sys.argv[1:] if argv is None else argv
        _refuse_undecodable(args)
        app = lean_test_app() if args[:1] == ["test"] else full_app()
        rc = app(args=args, standalone_mode=False, prog_name="graphlemon")
    except GraphLemonError as exc:
        _fail(exc.code, exc.message, exc.exit_code)
    except typer.Abort:
        _fail("ABORTED", "aborted", 1)
    except NoArgsIsHelpError as exc:  # `graphlemon` or a group alone: its help, as click does
        typer.echo(exc.format_message(), err=True)
        sys.exit(exc.exit_code)
    except UsageError as exc:  # a bad option or argument: the usage line, then our error format
        if exc.ctx is not None:
            typer.echo(exc.ctx.get_usage(), err=True)
            typer.echo(f"Try '{exc.ctx.command_path} --help' for help.", err=True)
        _fail(ErrorCode.INVALID_PARAM, exc.format_message(), exc.exit_code)
    except ClickException as exc:
        _fail(ErrorCode.INVALID_PARAM, exc.format_message(), exc.exit_code)
    except ValidationError as exc:  # a value the options let through but a model refuses: still bad input
        _fail(ErrorCode.INVALID_PARAM, _validation_message(exc), 2)
    except PermissionError as exc:  # a place this user cannot read or write, wherever it was met
        err = permission_denied(exc.filename or "a file", "read/write" if exc.filename is None else _need(exc))
        _fail(err.code, err.message, err.exit_code)
    except OSError as exc:  # a file the command needed (disk full, read-only, gone): its name and reason, no traceback
        where = f"{exc.filename}: " if exc.filename else ""
        _fail(ErrorCode.IO_ERROR, f"{where}{exc.strerror or exc}", 1)
    sys.exit(rc if isinstance(rc, int) else 0)


def _refuse_undecodable(args: list[str]) -> None:
    """An argument that is not UTF-8 (its bytes kept as surrogates by Python) cannot be a goal, a note or a title in
    the ledger's JSON: INVALID_PARAM naming it, before anything is written (was: a serialization traceback)."""
    for i, arg in enumerate(args, 1):
        bad = next((c for c in arg if "\udc80" <= c <= "\udcff"), None)
        if bad is not None:
            shown = arg.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")[:80]
            raise GraphLemonError(ErrorCode.INVALID_PARAM, f"argument {i} ('{shown}') is not UTF-8 text (byte "
                                  f"0x{ord(bad) - 0xDC00:02x}); give it as UTF-8, nothing was written")  # fmt: skip


def _validation_message(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ())) or exc.title
    return f"{where}: {first.get('msg')} (got {first.get('input')!r})"


def _need(exc: PermissionError) -> str:
    import os

    return "write" if os.path.exists(exc.filename) and os.access(exc.filename, os.R_OK) else "read/write"


def _fail(code: str, message: str, exit_code: int) -> None:
    typer.echo(f"error[{code}]: {message}", err=True)
    sys.exit(exit_code)
