"""The `graphlemon` command line: a thin typer app over the domain.

Commands import their domain modules lazily and Prefect only where they
orchestrate, so `--help`, `init` and `bugs` answer in well under a second.
Errors print `error[CODE]: message` on stderr; exit 2 for bad input, 1 for a
failed operation.
"""

from __future__ import annotations

import logging
import sys

import click
import typer

from ..errors import GraphLemonError
from . import agent, budget, bugs, init_cmd, report, run, sql, status, test_cmd, tester, triage

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


def main(argv: list[str] | None = None) -> None:
    logging.basicConfig(level=logging.WARNING, format="%(message)s", stream=sys.stderr)
    try:
        rc = app(args=argv, standalone_mode=False, prog_name="graphlemon")
    except GraphLemonError as exc:
        click.echo(f"error[{exc.code}]: {exc.message}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("error[ABORTED]: aborted", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    sys.exit(rc if isinstance(rc, int) else 0)
