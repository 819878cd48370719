"""`RemoteUnits`: the devloop's side of unit loops on workers that see only the project's git remote and Prefect
(`unit_runner: remote_pool`, docs/scale.md). Each unit loop is a run of the remote-unit-loop deployment
(flows/unit_loop.py); this flow, the ledger's one writer, takes its result in. Which run it takes in, waits for or
starts is graphlemon/devloop/remote_attempts.py's `plan`."""

from __future__ import annotations

import time

from graphlemon import lease as leases
from graphlemon.devloop.remote_attempts import NODE_TAG, RunSeen, exception_of, plan, run_tags, why_failed
from graphlemon.devloop.remote_watch import Watch, WatchBounds, heartbeat_key
from graphlemon.errors import ErrorCode, GraphLemonError
from graphlemon.stages.coder import unit_node_id
from graphlemon.stages.outcomes import UnitOutcome
from graphlemon.stages.session import LoopSession, RunRef, open_session


def result_store():
    """Prefect's default result storage block (PREFECT_DEFAULT_RESULT_STORAGE_BLOCK, e.g.
    `local-file-system/graphlemon-results` or an `s3-bucket/...` block): where remote unit loops keep their results
    and the devloop its state snapshots for them. Both sides must name the same block."""
    from prefect.blocks.core import Block
    from prefect.settings import PREFECT_DEFAULT_RESULT_STORAGE_BLOCK

    slug = PREFECT_DEFAULT_RESULT_STORAGE_BLOCK.value()
    if not slug:
        raise GraphLemonError(
            ErrorCode.INVALID_PARAM,
            "remote unit loops need a shared result store: set PREFECT_DEFAULT_RESULT_STORAGE_BLOCK (e.g. "
            "local-file-system/graphlemon-results) for the devloop and every worker (docs/scale.md)",
        )
    try:
        return Block.load(slug)
    except ValueError as exc:
        raise GraphLemonError(ErrorCode.INVALID_PARAM, f"result storage block {slug!r}: {exc}") from None


def attempt_of(session: LoopSession) -> str:
    """This start of the task's run: the id of the lease it holds (new at every start, docs/devloop.md)."""
    if session.lease is None:
        raise GraphLemonError(ErrorCode.INVALID_PARAM, "remote unit loops run under the task's lease (a devloop run)")
    return session.lease.lease_id


class RemoteUnits:
    """One unit loop on the remote pool: its runs so far are read back by tag (`remote_attempts`); a finished
    one's result is taken in, a running one is waited for, else a new run is started (at most `TRIES` per attempt),
    and when every run of this attempt ended without a result the unit stops with what each run said."""

    POLL_S = 1.0
    WORD_S = 60.0
    STOP_S = 5.0  # how often a wait for a run nobody has taken reads the task's lease for a person's stop
    ERROR_LOGS = 20  # a crashed run's last error logs read for its cause

    def __init__(self, bounds: WatchBounds | None = None) -> None:
        self.bounds = bounds or WatchBounds.from_env()

    def __call__(self, run: RunRef, unit_id: str, loop_round: int, feedback: str | None, pass_tag: str) -> UnitOutcome:
        from prefect.client.orchestration import get_client

        from graphlemon.blocks.git_remote import resolve_remote
        from graphlemon.devloop.remote_unit import RemoteUnitResult, dispatch, take_in
        from graphlemon.devloop.stages import MAX_PARALLEL_UNITS

        session = open_session(run)
        node = unit_node_id(run.task_id, unit_id, loop_round, pass_tag)
        stored = session.load_outcome(node, UnitOutcome)
        if stored is not None:  # taken in before the devloop was stopped
            return stored
        store, attempt = result_store(), attempt_of(session)
        job, unreadable, causes, started, deleted = None, set(), {}, set(), []
        with get_client(sync_client=True) as client:
            while True:
                step = plan(self._runs(client, node) + deleted, node, attempt, unreadable)
                if step.action == "give_up":
                    raise self._gave_up(unit_id, loop_round, step.failed, causes)
                if step.action == "start":
                    if step.key in started:  # started, yet not found by its tags: never start it twice
                        raise GraphLemonError(ErrorCode.EXECUTOR_ERROR, f"unit {unit_id}: the run started with key "
                                              f"{step.key} is not found by its tags {run_tags(node, attempt)}")  # fmt: skip
                    started.add(step.key)
                    job = job or dispatch(session, unit_id, loop_round, feedback, pass_tag, store, MAX_PARALLEL_UNITS,
                                          resolve_remote).model_copy(update={"heartbeat_s": self.bounds.heartbeat_s})  # fmt: skip
                    self._start(session.config.remote_unit_deployment, job, step.key, run_tags(node, attempt))
                    continue
                seen = step.run if step.action == "take_in" else self._wait(client, session, step.run, store)
                if seen.state_type == "CANCELLED":  # a person's stop (recorded on the lease): served here
                    session.checkpoint(f"unit {unit_id} · round {loop_round} (its run {seen.name} was cancelled)")
                if seen.state_type == "DELETED":
                    deleted.append(seen)
                data = _result_of(client, seen) if seen.state_type == "COMPLETED" else None
                if data is not None:
                    result = RemoteUnitResult.model_validate(data)
                    return take_in(session, _job_of(client, seen), result, resolve_remote)
                unreadable.add(seen.id)
                causes[seen.id] = self._cause(client, seen)

    def _runs(self, client, node: str) -> list[RunSeen]:
        from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterTags

        tagged = FlowRunFilter(tags=FlowRunFilterTags(all_=[f"{NODE_TAG}{node}"]))
        return sorted((_seen(r) for r in client.read_flow_runs(flow_run_filter=tagged)), key=lambda r: r.created)

    def _start(self, deployment: str, job, key: str, tags: list[str]) -> None:
        from prefect.deployments import run_deployment

        from .run_names import unit_run_name

        name = unit_run_name(job.unit_id, job.loop_round, job.pass_tag)
        run_deployment(deployment, parameters={"job": job.model_dump(mode="json")}, timeout=0, flow_run_name=name,
                       idempotency_key=key, tags=tags)  # fmt: skip

    def _wait(self, client, session: LoopSession, seen: RunSeen, store) -> RunSeen:
        """The run once it has ended — or once its worker is gone (no heartbeat within the bound: the run is marked
        Crashed with the reason), or it was deleted. A run cancelled in the UI is the person's stop, recorded on the
        task's lease at once; a run left Cancelling by a dead worker is marked Cancelled. While nobody picks the run
        up, a line every `WORD_S` seconds says so."""
        from prefect.exceptions import ObjectNotFound

        watch, said, stop_asked, stop_read = Watch(self.bounds), time.monotonic(), False, 0.0
        while not seen.final:
            time.sleep(self.POLL_S)
            try:
                seen = _seen(client.read_flow_run(seen.id))
            except ObjectNotFound:
                return seen.model_copy(update={"state_type": "DELETED", "state_name": "Deleted",
                                               "message": "it was deleted (in the Prefect UI or through its API)"})  # fmt: skip
            if seen.state_type in ("CANCELLING", "CANCELLED") and not stop_asked:
                stop_asked = True
                leases.request_stop(session.ledger, session.task_id, by="a person (Cancel in the Prefect UI)",
                                    note=f"unit run {seen.name} ({seen.id}) cancelled")  # fmt: skip
            gone = None if seen.final else watch.seen(seen.state_type, _beat(store, seen.id))
            if gone is not None:
                return self._close(client, session, seen, gone)
            if seen.state_type == "SCHEDULED" and time.monotonic() - stop_read > self.STOP_S:
                stop_read = time.monotonic()
                if self._stop_asked(session):
                    return self._close(client, session, seen.model_copy(update={"state_type": "CANCELLING"}),
                                       "the task was stopped by a person before a worker took this run",
                                       event="unit_run_cancelled")  # fmt: skip
            if seen.state_type == "SCHEDULED" and time.monotonic() - said > self.WORD_S:
                said = time.monotonic()
                session.timeline("unit_run_waiting", f"flow run {seen.name} ({seen.id}) waits for a worker of the "
                                 "remote pool: none has taken it yet", ref=seen.id)  # fmt: skip
        return seen

    def _stop_asked(self, session: LoopSession) -> bool:
        """A person's stop on the task's lease (`graphlemon stop`, the console, a Cancel of another unit's run): read
        every `STOP_S` seconds while a run waits for a worker, which is then not waited for (nothing of it ran)."""
        cur = leases.current(session.ledger, session.task_id)
        return cur is not None and cur.stop is not None

    def _close(self, client, session: LoopSession, seen: RunSeen, gone: str, event: str = "unit_run_lost") -> RunSeen:
        """A run whose worker is gone, closed with the reason: Crashed (Cancelled when it was being cancelled, or
        when the task was stopped before a worker took it: `event` then says so)."""
        from prefect.states import Cancelled, Crashed

        ended = Cancelled if seen.state_type == "CANCELLING" else Crashed
        try:
            client.set_flow_run_state(seen.id, ended(message=gone), force=True)
        except Exception:  # noqa: BLE001 - deleted meanwhile: the run is over all the same
            pass
        session.timeline(event, f"flow run {seen.name} ({seen.id}): {gone}; marked {ended.__name__}",
                         ref=seen.id)  # fmt: skip
        name = ended.__name__
        return seen.model_copy(update={"state_type": name.upper(), "state_name": name, "message": gone})

    def _cause(self, client, seen: RunSeen) -> str:
        """The child run's error: its state's message, or — a run whose process died (`Crashed`: "Process exited
        with status code: 1") — the last error its run logged with a traceback (the engine's "Unexpected exception
        encountered when trying to load flow" of a worker missing a dependency or of another version), else its
        last error line; `why_failed` reads its first line and the exception it ends with."""
        if seen.state_type != "CRASHED":
            return seen.message
        from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId, LogFilterLevel
        from prefect.client.schemas.sorting import LogSort

        try:
            logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[seen.id]),
                                                         level=LogFilterLevel(ge_=40)), sort=LogSort.TIMESTAMP_DESC,
                                    limit=self.ERROR_LOGS)  # fmt: skip
        except Exception:  # noqa: BLE001 - the logs could not be read: the state's message is what there is
            return seen.message
        raised = [log.message for log in logs if exception_of(log.message.splitlines())]
        return (raised or [log.message for log in logs] or [seen.message])[0]

    def _gave_up(self, unit_id: str, loop_round: int, failed: list[RunSeen], causes: dict) -> GraphLemonError:
        said = "; ".join(why_failed(r, causes.get(r.id, "")) for r in failed)
        return GraphLemonError(
            ErrorCode.EXECUTOR_ERROR,
            f"unit {unit_id} (round {loop_round}) ran on the remote pool {len(failed)} times without a result: "
            f"{said.rstrip('.')}. "
            "Fix the cause, then resume: a resume starts the unit's run again (finished units are kept)",
            flow_run_id=failed[-1].id,
        )


def _seen(flow_run) -> RunSeen:
    state = flow_run.state
    return RunSeen(
        id=str(flow_run.id), name=flow_run.name, state_type=state.type.value if state else "SCHEDULED",
        state_name=state.name if state else "unknown", message=(state.message or "") if state else "",
        tags=list(flow_run.tags or []), created=flow_run.created,
    )  # fmt: skip


def _beat(store, flow_run_id: str) -> bytes | None:
    try:
        return store.read_path(heartbeat_key(flow_run_id))
    except Exception:  # noqa: BLE001 - no beat yet (or the store did not answer): the bound decides
        return None


def _job_of(client, seen: RunSeen):
    from graphlemon.devloop.remote_unit import RemoteUnitJob

    return RemoteUnitJob.model_validate(client.read_flow_run(seen.id).parameters["job"])


def _result_of(client, seen: RunSeen) -> dict | None:
    """A finished run's result from the result store, or None when it ended without one."""
    state = client.read_flow_run(seen.id).state
    if state is None or not state.is_completed():
        return None
    try:
        return state.result(raise_on_failure=False)
    except Exception:  # noqa: BLE001 - a result lost with its storage: the run is as good as never finished
        return None
