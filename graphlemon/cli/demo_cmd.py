"""`graphlemon demo` (and `make demo`): the DevLoop on a temp copy of the snake example shipped in the package, offline,
with the scripted executor.

The scripted executor replays the example's playbook (`--skill`: playbook-skill.yaml, a skill iteration end to end,
REQ-08): the demo shows GraphLemon's plumbing and decisions (worktrees, real pytest runs, bugs, root-cause routing,
Prefect, the ledger), not a model's work. It passes `--executor scripted`, so it never calls a model, even with
ANTHROPIC_API_KEY set. It works from an installed wheel: the example is package data (graphlemon/examples/snake).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Annotated

import typer

CliMain = Callable[[list[str]], None]  # graphlemon.cli.main, passed in (the CLI package imports this module)
GIT = ["git", "-c", "user.name=GraphLemon demo", "-c", "user.email=demo@graphlemon.local"]


def example_dir() -> Path:
    """The snake example: in the installed package (a wheel), or the source checkout's examples/ (its link)."""
    return Path(str(resources.files("graphlemon") / "examples" / "snake"))


def register(app: typer.Typer, cli_main: CliMain) -> None:
    @app.command()
    def demo(
        skill: Annotated[bool, typer.Option(help="The skill-iteration story (REQ-08) instead of the plain one.")] = False,
        engine: Annotated[str, typer.Option(help="prefect (a flow run, the default) or direct (no Prefect)")] = "prefect",
        keep_going: Annotated[
            bool, typer.Option(hidden=True, help="Exit 0 even when the task does not end done (tests).")
        ] = False,
    ) -> None:
        """Run the DevLoop on a temp copy of the snake example (scripted: a replayed playbook, no model is called)."""
        rc = run_demo(cli_main, "playbook-skill.yaml" if skill else "playbook.yaml", engine)
        raise typer.Exit(0 if keep_going else rc)


def run_demo(cli_main: CliMain, playbook_name: str = "playbook.yaml", engine: str = "prefect") -> int:
    """The demo; graphlemon's own commands run in this process through `cli_main` (graphlemon.cli.main)."""
    from ..errors import GraphLemonError, invalid_param
    from ._common import invocation

    if engine not in ("prefect", "direct"):
        raise invalid_param(f"unknown engine {engine!r}; choose prefect or direct")
    example = example_dir()
    if not (example / playbook_name).is_file():
        raise GraphLemonError("PROJECT_NOT_FOUND", f"the snake example is not in this installation ({example})")
    if importlib.util.find_spec("pytest") is None:  # the example's tests run with the interpreter's pytest
        raise invalid_param(f"the demo runs the snake example's tests with pytest, which {sys.executable} does not "
                            "have: pip install pytest (or graphlemon[demo])")  # fmt: skip
    # the demo's code comes from the playbook shipped with GraphLemon, not from a model: confined where bwrap works,
    # and on a machine without it run anyway (said loudly) instead of refused, as a real run is (docs/agents.md)
    os.environ.setdefault("GRAPHLEMON_TEST_CONFINEMENT", "auto")
    os.environ.setdefault("COLUMNS", "150")  # the tables as wide as a wide terminal, also in a pipe
    started = time.monotonic()
    me = invocation()
    work = Path(tempfile.mkdtemp(prefix="graphlemon-demo-"))
    repo = work / "snake"
    shutil.copytree(example / "repo", repo, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    for step in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "empty snake package"]):
        subprocess.run([*GIT, *step], cwd=repo, check=True)
    print("GraphLemon demo — SCRIPTED EXECUTOR (a replayed playbook, no model is called)", flush=True)
    print(f"target repository: {repo}", flush=True)
    _sh(me, ["init", str(repo)], work, cli_main)
    rc = _sh(me, run_command(repo, example / playbook_name, engine), repo, cli_main)
    _sh(None, ["git", "log", "--oneline", "--graph", "-12"], repo, cli_main)
    _sh(me, ["bugs", "list", "--project", str(repo)], repo, cli_main)
    if playbook_name != "playbook.yaml":  # the skill demo: the audit log and the skills report
        _sh(me, ["skills", "log", "--project", str(repo)], repo, cli_main)
        _sh(me, ["report", "skills", "--project", str(repo)], repo, cli_main)
    print(f"\ndemo finished in {time.monotonic() - started:.1f} s; the project is left in {repo}")
    print(f"next, as printed (copy a line): {me} status --project {repo}")
    print(f"                                {me} report convergence --project {repo}")
    print(f"                                {me} console   (then open the URL it prints)")
    if me != "graphlemon":
        print(f"(`graphlemon` alone is not on your PATH: it is {me}; `. {Path(me).parent}/activate` puts it there)")
    return rc


def run_command(repo: Path, playbook: Path, engine: str) -> list[str]:
    """`graphlemon run` for the demo: the scripted executor named explicitly, so a key in the environment never
    turns the demo into paid model calls."""
    return ["run", "Implement a snake game", "--project", str(repo), "--executor", "scripted", "--playbook",
            str(playbook), "--max-unit-attempts", "2", "--engine", engine]  # fmt: skip


def _sh(me: str | None, args: list[str], cwd: Path, cli_main: CliMain) -> int:
    """Print the command as a person would type it, then run it: git as a process, graphlemon's own commands in this
    process (the same CLI, without starting an interpreter for each: seconds on a busy machine)."""
    shown = [me or args[0], *(args if me else args[1:])]
    print(f"\n$ {' '.join(_quoted(a) for a in shown)}", flush=True)
    if me is None:
        return subprocess.run(args, cwd=cwd).returncode
    here = os.getcwd()
    os.chdir(cwd)
    try:
        cli_main(args)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        os.chdir(here)
        sys.stdout.flush()
    return 0


def _quoted(arg: str) -> str:
    import shlex

    return shlex.quote(arg)
