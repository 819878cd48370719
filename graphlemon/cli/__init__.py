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
from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError  # typer vendors click

from ..errors import ErrorCode, GraphLemonError
from . import agent, budget, bugs, console_cmd, init_cmd, report, run, sql, status, test_cmd, tester, triage

app = typer.Typer(
    name="graphlemon",
    help="GraphLemon: an autonomous, auditable development loop on a real git repository.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
init_cmd.register(app)
run.register(app)
status.register(app)
test_cmd.register(app)
triage.register(app)
app.add_typer(bugs.app, name="bugs")
app.add_typer(budget.app, name="budget")
app.add_typer(agent.app, name="agent")
app.add_typer(tester.app, name="tester")
app.add_typer(report.app, name="report")
sql.register(app)
console_cmd.register(app)


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(level=logging.WARNING, format="%(message)s", stream=sys.stderr)
    try:
        rc = app(args=argv, standalone_mode=False, prog_name="graphlemon")
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
    sys.exit(rc if isinstance(rc, int) else 0)


def _fail(code: str, message: str, exit_code: int) -> None:
    typer.echo(f"error[{code}]: {message}", err=True)
    sys.exit(exit_code)
