"""`graphlemon run GOAL` and `graphlemon resume TASK_ID`: the DevLoop from the command line.

These are the commands that orchestrate, so they import Prefect (seconds), and only
after the input has been checked. Each takes the task's lease first, before it changes anything (a
second run of a running task is refused with `TASK_HELD`, naming the holder); a console launch hands
its lease to the process it starts (`GRAPHLEMON_LEASE`), which adopts it.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from ._common import JsonOpt, ProjectOpt, console, emit_json, line, open_project

ExecutorOpt = Annotated[
    str | None,
    typer.Option(help="scripted (needs --playbook), anthropic or claude_code; default: scripted with --playbook, "
                 "else anthropic when ANTHROPIC_API_KEY is set"),
]  # fmt: skip
PlaybookOpt = Annotated[Path | None, typer.Option(help="Playbook for the scripted executor.")]
EngineOpt = Annotated[
    str, typer.Option(help="prefect (a flow run, the default) or direct (no Prefect, for quick local runs)")
]


def register(app: typer.Typer) -> None:
    @app.command()
    def run(
        goal: Annotated[str, typer.Argument(help='What to build, e.g. "Implement a snake game".')],
        executor: ExecutorOpt = None,
        playbook: PlaybookOpt = None,
        max_unit_attempts: Annotated[int, typer.Option(min=1, max=20, help="L1 attempts per unit per round.")] = 3,
        max_rounds: Annotated[int, typer.Option(min=1, max=50, help="Org-loop rounds before escalating.")] = 5,
        engine: EngineOpt = "prefect",
        budget_tokens: Annotated[
            int | None, typer.Option(help="Budget guardrail: at most this many tokens (REQ-10).")
        ] = None,
        budget_usd: Annotated[
            float | None, typer.Option(help="Budget guardrail: at most this many US dollars.")
        ] = None,
        quiet: Annotated[bool, typer.Option(help="No live timeline.")] = False,
        project: ProjectOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Create a task for GOAL and run the DevLoop until it is done or needs a human (REQ-01)."""
        from ..agents.budget import check_budget, update_budget
        from ..errors import invalid_param
        from ..lease import held
        from ..project import require_commit, require_git, require_writable
        from ..stages.session import LoopConfig
        from ..taskboard import TaskBoard, check_goal_text

        api = _start_temporary_api(engine)
        handle = open_project(project)
        check_goal_text(goal)
        require_git(handle)
        require_writable(handle)
        require_commit(handle)  # before a task exists: the loop branches from HEAD
        backend = _backend(executor, playbook, engine, api, root=handle.root)
        if budget_tokens is not None and budget_usd is not None:
            raise invalid_param("give one budget: --budget-tokens or --budget-usd")
        budget = (budget_tokens, "token_count") if budget_tokens is not None else (budget_usd, "cost_usd")
        if budget[0] is not None:
            check_budget(*budget)
        config = {"max_unit_attempts": max_unit_attempts, "max_loop_rounds": max_rounds}
        board = TaskBoard(handle.ledger)
        # recorded with the task: a run killed before the loop starts (Prefect still importing) resumes with them
        settings = LoopConfig.model_validate({"executor": backend, "playbook": playbook.resolve() if playbook else None,
                                              **config}).model_dump(mode="json")  # fmt: skip
        task = board.create(goal, settings=settings)
        with (
            _interrupt_says_next(handle, task.task_id, as_json),
            held(handle.ledger, task.task_id, _holder("graphlemon run"), status=lambda: board.get(task.task_id).status),
        ):
            if budget[0] is not None:
                update_budget(handle.ledger, task.task_id, *budget, by="graphlemon run")
            final, took = _drive(handle, task.task_id, backend, playbook, config, engine, api, quiet, as_json)
        _report(handle, final, took, as_json)

    @app.command()
    def resume(
        task_id: Annotated[str, typer.Argument(help="The task to continue.")],
        note: Annotated[
            str | None, typer.Option(help="For a blocked task: what the human decided (the coder sees it).")
        ] = None,
        executor: ExecutorOpt = None,
        playbook: PlaybookOpt = None,
        engine: EngineOpt = "prefect",
        quiet: Annotated[bool, typer.Option(help="No live timeline.")] = False,
        project: ProjectOpt = None,
        as_json: JsonOpt = False,
    ) -> None:
        """Continue a task: after a crash (from the finished work it kept), after a stop, or when it needs you (blocked),
        with your note to the coder."""
        from ..agents.automode_denials import reset_classifier_counts
        from ..lease import held
        from ..project import require_git, require_writable
        from ..stages.session import LoopConfig
        from ..taskboard import TaskBoard

        handle = open_project(project)
        board = TaskBoard(handle.ledger)
        task_id = board.resolve(task_id)  # the full id, or a unique prefix of it as the tables show it
        task = board.get(task_id)
        if task.terminal:  # a done or abandoned task: a clear error before anything starts, nothing changes
            board.manual_resume(task_id, note=note)
        require_git(handle)
        require_writable(handle)
        api = _start_temporary_api(engine)
        if LoopConfig.recorded(handle.state_dir, task_id) is not None:  # by default the task's own executor, playbook
            saved = LoopConfig.load(handle.state_dir, task_id)
            executor = executor or saved.executor
            playbook = playbook or (saved.playbook if executor == "scripted" else None)  # a switched backend: none
        backend = _backend(executor, playbook, engine, api, root=handle.root)  # one that cannot run changes nothing
        adopt = os.environ.get(LEASE_ENV) or None  # a lease the console took for this process
        with _interrupt_says_next(handle, task_id, as_json), held(handle.ledger, task_id, _holder("graphlemon resume"),
                  adopt=adopt, status=lambda: board.get(task_id).status) as lease:  # fmt: skip
            task = board.get(task_id)  # as it is now that this process holds the task
            if (  # blocked, or queued again by a raised budget: a deployed run of it may wait in the Prefect UI
                task.status in ("blocked_pending_human", "queued")
                and engine == "prefect"
                and _answer_waiting_run(handle, lease, note, api)
            ):
                return
            if task.status in ("blocked_pending_human", "paused") or task.terminal:
                board.manual_resume(task_id, note=note)  # a done task is a clear error and changes nothing
                reset_classifier_counts(handle.ledger, task_id, note or "manual resume")  # REQ-07: a person resumed
            final, took = _drive(handle, task_id, backend, playbook, {}, engine, api, quiet, as_json)
        _report(handle, final, took, as_json)


LEASE_ENV = "GRAPHLEMON_LEASE"  # the lease a console launch hands to the process it starts
LAUNCH_ENV = "GRAPHLEMON_LAUNCH_ID"  # that launch's id (a goal's task is found through its lease)


def _holder(command: str):
    from ..lease import Holder

    launch = os.environ.get(LAUNCH_ENV) or None
    return Holder.here(f"{command} (console launch {launch})" if launch else command, launch_id=launch)


def _answer_waiting_run(handle, lease, note: str | None, api) -> bool:
    """A deployed run of this task waits in the Prefect UI for a person (the journal says which: its lease was let go
    to wait): resume *that* run (its worker carries on, adopting the lease handed to it) instead of starting a second
    one here, so no suspended run is left behind."""
    from ..lease import Holder

    run = lease.waiting_run  # the run its predecessors left waiting, as this lease took the task
    if run is None:
        return False
    if api is not None:  # the API the run was recorded in: the configured one, or GraphLemon's local server
        api.wait()
    from graphlemon.flows.devloop import resume_suspended_run

    if not resume_suspended_run(run, note):
        return False
    lease.hand(Holder(label=f"Prefect flow run {run} (resumed from its form)", flow_run_id=run))
    console().print(f"resumed the waiting Prefect flow run {run}; it continues on its worker", markup=False,
                    highlight=False)  # fmt: skip
    return True


def _backend(executor: str | None, playbook: Path | None, engine: str, api=None, *, root: Path | None = None) -> str:
    from ..agents import EXECUTORS, check_executor
    from ..errors import invalid_param

    if engine not in ("prefect", "direct"):
        raise invalid_param(f"unknown engine {engine!r}; choose prefect or direct")
    # a playbook means scripted, whatever keys are set: a replayed demo never calls (or pays for) a model
    keyed = bool(os.environ.get("ANTHROPIC_API_KEY"))
    backend = executor or ("anthropic" if keyed and playbook is None else "scripted")
    if backend not in EXECUTORS:
        raise invalid_param(f"unknown executor {backend!r}; choose one of: {', '.join(EXECUTORS)}")
    if backend != "scripted" and playbook is not None:
        raise invalid_param(f"--playbook is for the scripted executor; {backend} does not replay a playbook")
    if executor == "scripted" and playbook is None:
        raise invalid_param("the scripted executor replays a playbook: give --playbook FILE")
    if backend == "scripted" and playbook is None:
        raise invalid_param("a run needs a model or a script: set ANTHROPIC_API_KEY, or use --executor claude_code (a "
                            "logged-in Claude Code), or replay a scripted run with --playbook FILE")  # fmt: skip
    if playbook is not None:
        from ..inputs import existing_file

        existing_file(playbook, "playbook")
    check_executor(backend, playbook=playbook, settings=_agent_settings(engine, api))  # before anything is written
    if playbook is not None and root is not None:
        from ..agents.playbook import Playbook

        Playbook.load(playbook).check_fits(root)  # a story written for another repository is not replayed here
    return backend


def _start_temporary_api(engine: str):
    """A fresh `graphlemon` process about to run a flow starts Prefect's temporary server (when no API is
    configured) in the background, so the server's start-up overlaps this command's own (flows/temporary_api.py);
    returns it, or None. Not when Prefect is already imported: a caller in this process (a test harness) chose
    its API already."""
    if engine == "prefect" and "prefect" not in sys.modules:
        from graphlemon.flows.temporary_api import start_in_background

        return start_in_background()
    return None


def _agent_settings(engine: str, api=None):
    """The settings the run's stages will use: Prefect blocks for a Prefect run with an API configured, else env."""
    if engine == "prefect":
        if api is not None:
            api.imported.wait()  # one thread imports Prefect at a time
        from graphlemon.blocks.agents import load_agent_settings

        return load_agent_settings()
    from ..agents import AgentSettings

    return AgentSettings.from_env()


def _drive(
    handle,
    task_id: str,
    backend: str,
    playbook: Path | None,
    config: dict,
    engine: str,
    api,
    quiet: bool,
    as_json: bool,
):
    from ..scratch import sweep_stale
    from ..taskboard import TaskBoard

    sweep_stale()  # scratch folders of killed runs (only those whose process has ended)
    out = console()
    if backend == "scripted" and not as_json:
        out.print(line(("executor: scripted", "yellow"), f" — replaying {playbook}; this shows the loop's plumbing, "
                       "not a model's work"), highlight=False)  # fmt: skip
    follower = None if quiet or as_json else _Follower(handle, task_id, out)
    started = time.monotonic()
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")  # the live timeline is the progress view
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")  # offline by default
    try:
        if engine == "prefect":
            if api is not None:
                api.imported.wait()
            from graphlemon.flows.devloop import devloop

            _one_line_per_event()
            if api is not None:
                api.wait()
            devloop(project=str(handle.root), executor=backend, playbook=str(playbook) if playbook else None,
                    task_id=task_id, config=config, return_state=True)  # the task's status is the outcome  # fmt: skip
        else:
            from ..devloop.driver import DirectEngine, drive
            from ..stages.session import LoopSession

            session = LoopSession.start(handle, task_id, executor=backend, playbook=playbook, **config)
            engine_ = DirectEngine(on_wait=lambda msg: typer.echo(msg, err=True))
            with session.bound():
                drive(session, engine_, on_done=[_deploy_merge])
    finally:
        if follower:
            follower.stop()
    return TaskBoard(handle.ledger).get(task_id), time.monotonic() - started


@contextmanager
def _interrupt_says_next(handle, task_id: str, as_json: bool) -> Iterator[None]:
    """Ctrl-C: once the task's lease is let go, say where the task stands and the next step (exit status 130)."""
    try:
        yield
    except KeyboardInterrupt:
        if not as_json:
            from ..taskboard import TaskBoard
            from .show import print_next_step

            out = console()
            out.print(
                line(("interrupted (Ctrl-C): ", "yellow"), "the run stopped where it was; its finished steps are kept")
            )
            print_next_step(handle, TaskBoard(handle.ledger).get(task_id), out)
        raise


def _report(handle, task, took: float, as_json: bool) -> None:
    """The run's end: the task as it stands (the exit status says done or not), every refused action counted, and
    the next step."""
    from ..models import NodeEvent
    from ..violations import fold, with_refusals
    from ..wording import status_words

    refused = fold(handle.ledger.read_as("node", NodeEvent), task.task_id)
    if as_json:
        emit_json({**task.model_dump(mode="json"), "duration_s": round(took, 2), "violations": refused.as_dict()})
    else:
        from .show import print_next_step, show_task

        out = console()
        show_task(handle, task.task_id, out)
        out.print(f"({took:.1f} s)")
        if refused.count:  # the last lines a person reads name them too
            out.print(line((f"{task.task_id}: {with_refusals(status_words(task.status, task.blocked_reason), refused)}",
                            "yellow"), f"; `graphlemon status {task.task_id}` lists each one"))  # fmt: skip
        print_next_step(handle, task, out)
    raise typer.Exit(0 if task.status == "done" else 1)


class _PrefectLines(logging.Filter):
    """The terminal shows the task's timeline, one line per event (the `_Follower`): Prefect's INFO lines (`Beginning
    flow run`, `Finished in state Completed()`, the timeline it streams to the run's logs) stay in the run's logs in
    the Prefect UI, off the terminal; its warnings and errors, and the lines the flow marks `graphlemon_say`, print."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith("prefect") or getattr(record, "graphlemon_say", False):
            return True
        if _interrupted():
            return False  # Prefect's "Crash detected! ... interrupt signal": GraphLemon's own words say it
        if record.getMessage().startswith(("Finished in state", "Task run failed with state:")):
            return False  # a stage's own red state (a red test run, a blocked unit): its timeline line says it
        return record.levelno >= logging.WARNING


class _NotAfterInterrupt(logging.Filter):
    """Prefect's API log handler after Ctrl-C: the run's client is closing, so a record sent then only prints a
    `--- Logging error ---` traceback (`Cannot send a request, as the client has been closed`); it is dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not _interrupted()


def _interrupted() -> bool:
    """This thread is unwinding a Ctrl-C, or GraphLemon is ending after one (its test runs were ended: every
    error from then on is the interrupt's own)."""
    from ..testrun.process import stopping

    return isinstance(sys.exc_info()[1], KeyboardInterrupt) or stopping()


def _one_line_per_event() -> None:
    for handler in logging.getLogger().handlers:
        _add_filter(handler, _PrefectLines)
    for name in ("prefect.flow_runs", "prefect.task_runs"):  # their own handler: the API's
        for handler in logging.getLogger(name).handlers:
            _add_filter(handler, _NotAfterInterrupt)


def _add_filter(handler: logging.Handler, kind: type[logging.Filter]) -> None:
    if not any(isinstance(f, kind) for f in handler.filters):
        handler.addFilter(kind())


def _deploy_merge(session, task) -> None:
    """On done, in GraphLemon's own repository (self-hosted): its merge is deployed in this process (REQ-15)."""
    from ..deploy.self_deploy import deploy_merged

    deploy_merged(session.project, task.task_id)


class _Follower:
    """Prints timeline events as the loop appends them (a live view from the ledger)."""

    def __init__(self, handle, task_id: str, out) -> None:
        from ..ledger import Ledger

        self.ledger, self.task_id, self.out = Ledger(handle.state_dir), task_id, out
        self.seen = len(self.ledger.read("timeline"))
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.wait(0.3):
                self.flush()
        except Exception:  # noqa: BLE001 - the live view is a convenience: a ledger the run cannot read ends it quietly
            return  # (the run itself reports the error)

    def flush(self) -> None:
        from ..wording import event_words, printable, summary_words

        events = self.ledger.read("timeline")
        for e in events[self.seen :]:
            if e.task_id in (self.task_id, None):
                unit = f" [{e.unit_id}]" if e.unit_id else ""
                said = printable(summary_words(e.event, e.summary))
                self.out.print(f"  {e.ts:%H:%M:%S} {event_words(e.event):<13}{unit} {said}", highlight=False,
                               markup=False)  # fmt: skip
        self.seen = len(events)

    def stop(self) -> None:
        self._stop.set()
        self.thread.join(timeout=2)
        self.flush()
