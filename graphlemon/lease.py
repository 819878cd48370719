"""One lease per task: who runs it, recorded in the task's journal (`.graphlemon/leases.ndjson`, kind `lease`).

Whatever runs a task — `graphlemon run` / `resume`, a console action, a Prefect deployment run — first takes the
task's lease, atomically (the ledger's file lock around read, decide, append). A second starter is refused with
`TASK_HELD`, naming the holder and since when. A lease whose holder is gone (its process ended, or its heartbeat
stopped) is taken over, and the `taken_over` event says which lease it replaced and why. The console's "running /
not running", the goal slots and a person's stop are folds of these events; nothing else says who runs a task.

    with held(ledger, task_id, Holder.here("graphlemon resume")) as lease:   # TASK_HELD if another holds it
        ...                      # lease.check(step) at each safe point: StopRequested / LeaseLost
        lease.take_slot(limit)   # one of the project's goal slots, until the lease is released

API and semantics (heartbeat, staleness, hand-over to a child process or a flow run, stop requests, the goal
slots, what a remote holder must do): docs/devloop.md, "One lease per task".
"""

from __future__ import annotations

import contextvars
import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Literal

from pydantic import BaseModel

from .errors import ErrorCode, GraphLemonError, LeaseLost, StopRequested, TaskHeld
from .ledger import Ledger
from .models import LeaseEvent, TaskStatus, utcnow
from .processes import boot_id, pid_alive, proc_start

log = logging.getLogger(__name__)


def _seconds(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        return default
    return value if value > 0 else default


HEARTBEAT_S = _seconds("GRAPHLEMON_LEASE_HEARTBEAT_S", 30.0)  # a holder renews its lease this often
STALE_S = _seconds("GRAPHLEMON_LEASE_STALE_S", 120.0)  # a holder on another machine is gone after this silence
RESERVE_S = _seconds("GRAPHLEMON_LEASE_RESERVE_S", 600.0)  # a flow run handed the lease must start within this
SLOT_POLL_S = 0.2


class Holder(BaseModel):
    """What runs (or will run) a task: a process on a machine, or a flow run that has not started yet."""

    label: str  # "graphlemon resume", "console: run it now", "Prefect flow run devloop · … (id)"
    pid: int | None = None
    host: str | None = None
    boot_id: str | None = None
    proc_start: int | None = None
    flow_run_id: str | None = None
    launch_id: str | None = None
    action_id: str | None = None

    @classmethod
    def here(cls, label: str, *, pid: int | None = None, **fields: str | None) -> Holder:
        """This process (or the process `pid` of this machine, e.g. a child just started)."""
        pid = os.getpid() if pid is None else pid
        return cls(label=label, pid=pid, host=socket.gethostname(), boot_id=boot_id(), proc_start=proc_start(pid),
                   **fields)  # fmt: skip

    def fields(self) -> dict:
        return self.model_dump(exclude={"label"}) | {"holder": self.label}

    def describe(self) -> str:
        where = f"pid {self.pid} on {self.host}" if self.pid is not None else f"flow run {self.flow_run_id}"
        return f"{self.label} ({where})"


class Stop(BaseModel):
    """A person's request that the holder stop at its next safe point."""

    by: str
    note: str = ""
    then: Literal["block", "abandon"] = "block"
    at: datetime


class Lease(BaseModel):
    """A lease of a task: the fold of its events."""

    lease_id: str
    task_id: str
    holder: Holder
    since: datetime
    heartbeat: datetime
    reserved_until: datetime | None = None
    previous: str | None = None  # the lease this one took over
    took_over_because: str | None = None
    stop: Stop | None = None
    slot: bool = False
    refused: int = 0  # starters this lease refused
    released: datetime | None = None
    released_because: str | None = None
    task_status: TaskStatus | None = None  # at its release
    waiting_run: str | None = None  # released while a deployed flow run waits for a person

    def gone(self, now: datetime | None = None) -> str | None:
        """None while the holder may still run the task; else why it is gone (a fact of this machine or the clock).

        A holder on this machine (the same boot) is gone when its process has ended, or its pid now names another
        process (its start differs). A holder elsewhere is gone when it has not renewed the lease for `STALE_S`.
        A lease handed to a flow run not started yet holds until `reserved_until`."""
        if self.released is not None:
            return f"released {self.released:%H:%M:%S}" + (f" ({self.released_because})" if self.released_because else "")
        h, now = self.holder, now or utcnow()
        if h.pid is None:
            if self.reserved_until is not None and now < self.reserved_until:
                return None
            return f"{h.describe()} did not start by {self.reserved_until or self.since:%H:%M:%S}"
        if h.boot_id is not None and h.boot_id == boot_id():
            if not pid_alive(h.pid):
                return f"pid {h.pid} on {h.host} has ended"
            started = proc_start(h.pid)
            if h.proc_start is not None and started is not None and started != h.proc_start:
                return f"pid {h.pid} on {h.host} has ended (the pid now names another process)"
            return None
        silent = (now - self.heartbeat).total_seconds()
        if silent <= STALE_S:
            return None
        return f"{h.describe()} has not renewed its lease for {silent:.0f} s (stale after {STALE_S:.0f} s)"

    def describe(self) -> str:
        return f"{self.holder.describe()} since {self.since:%Y-%m-%d %H:%M:%S} UTC"


# -- the fold --------------------------------------------------------------------------------------------------


def apply_event(leases: dict[str, Lease], order: dict[str, list[str]], ev: LeaseEvent) -> None:
    """One event into `leases` (by lease id) and `order` (task -> its lease ids, oldest first)."""
    holder_fields = {k: getattr(ev, k) for k in Holder.model_fields if k != "label"}
    lease = leases.get(ev.lease_id)
    if ev.event in ("taken", "taken_over"):
        leases[ev.lease_id] = Lease(
            lease_id=ev.lease_id, task_id=ev.task_id, holder=Holder(label=ev.holder or "?", **holder_fields),
            since=ev.ts, heartbeat=ev.ts, previous=ev.previous, took_over_because=ev.reason,
            reserved_until=ev.reserved_until,
        )  # fmt: skip
        order.setdefault(ev.task_id, []).append(ev.lease_id)
        return
    if lease is None:
        return  # an event about a lease this ledger never saw taken: nothing to fold into
    if ev.event in ("handed", "adopted"):  # a new holder: its identity, keeping the action and launch it serves
        kept = {"action_id": lease.holder.action_id, "launch_id": lease.holder.launch_id}
        lease.holder = Holder(label=ev.holder or lease.holder.label,
                              **{**holder_fields, **{k: v for k, v in kept.items() if not holder_fields[k]}})  # fmt: skip
        lease.reserved_until = ev.reserved_until
        lease.heartbeat = ev.ts
    elif ev.event == "renewed":
        lease.heartbeat = ev.ts
        if ev.flow_run_id:
            lease.holder.flow_run_id = ev.flow_run_id
    elif ev.event == "stop_requested":
        if lease.stop is None or ev.then == "abandon":
            lease.stop = Stop(by=ev.by or "a person", note=ev.note or "", then=ev.then or "block", at=ev.ts)
    elif ev.event == "slot_taken":
        lease.slot = True
    elif ev.event == "slot_released":
        lease.slot = False
    elif ev.event == "refused":
        lease.refused += 1
    elif ev.event == "released":
        lease.released, lease.released_because = ev.ts, ev.reason
        lease.task_status, lease.waiting_run, lease.slot = ev.task_status, ev.waiting_run, False


def fold(events: Iterable[LeaseEvent]) -> dict[str, list[Lease]]:
    """task -> its leases, oldest first."""
    leases: dict[str, Lease] = {}
    order: dict[str, list[str]] = {}
    for ev in events:
        apply_event(leases, order, ev)
    return {task: [leases[i] for i in ids] for task, ids in order.items()}


def history(ledger: Ledger, task_id: str) -> list[Lease]:
    """The task's leases, oldest first."""
    return fold(e for e in ledger.read_as("lease", LeaseEvent) if e.task_id == task_id).get(task_id, [])


def latest(leases: list[Lease]) -> Lease | None:
    """The task's lease that is not released (live or left by a holder that is gone), or None."""
    return leases[-1] if leases and leases[-1].released is None else None


def current(ledger: Ledger, task_id: str) -> Lease | None:
    return latest(history(ledger, task_id))


def live(ledger: Ledger, task_id: str) -> Lease | None:
    """The task's lease whose holder is running it now, or None."""
    lease = current(ledger, task_id)
    return lease if lease is not None and lease.gone() is None else None


def reserved_for(ledger: Ledger, task_id: str, flow_run_id: str) -> str | None:
    """The id of the task's lease handed to the flow run `flow_run_id` before it started (it adopts it), or None."""
    lease = current(ledger, task_id)
    if lease is not None and lease.holder.pid is None and lease.holder.flow_run_id == flow_run_id:
        return lease.lease_id
    return None


def waiting_run(ledger: Ledger, task_id: str, before: str | None = None) -> str | None:
    """The deployed flow run that waits for a person's answer in Prefect, or None: the run let go of the lease to wait
    (`waiting_run` on its release), and every holder since (a console's or a stopper's short hold) that did not run
    the loop itself passed it on. `before`: as of the lease before that one."""
    mine = history(ledger, task_id)
    if before is not None:
        mine = mine[: next((i for i, x in enumerate(mine) if x.lease_id == before), len(mine))]
    return mine[-1].waiting_run if mine and mine[-1].released is not None else None


# -- taking, handing, renewing, releasing ---------------------------------------------------------------------


def new_lease_id() -> str:
    return f"lease-{utcnow():%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def _event(task_id: str, lease_id: str, event: str, holder: Holder | None = None, **fields) -> LeaseEvent:
    return LeaseEvent(task_id=task_id, lease_id=lease_id, event=event, **(holder.fields() if holder else {}),
                      **fields)  # type: ignore[arg-type]  # fmt: skip


def held_error(lease: Lease) -> TaskHeld:
    stopping = f"; a stop was requested by {lease.stop.by} at {lease.stop.at:%H:%M:%S} UTC" if lease.stop else ""
    return TaskHeld(
        f"task {lease.task_id} is run by {lease.describe()}{stopping}: this start was refused and nothing changed "
        f"(`graphlemon stop {lease.task_id}` stops that run at its next safe point)",
        task_id=lease.task_id, lease_id=lease.lease_id, holder=lease.holder.label, pid=lease.holder.pid,
        host=lease.holder.host, since=lease.since.isoformat(), action_id=lease.holder.action_id,
        flow_run_id=lease.holder.flow_run_id, stopping=lease.stop is not None,
    )  # fmt: skip


def take(ledger: Ledger, task_id: str, holder: Holder, *, adopt: str | None = None) -> tuple[Lease, Lease | None]:
    """Take the task's lease for `holder`, atomically -> (the lease, the lease of a gone holder it took over).

    `adopt`: the id of a lease handed to this process (a console launch, a reserved flow run): while it is still the
    task's lease, it becomes this holder's. TASK_HELD (the holder named) while anything else live holds the task; the
    refusal is recorded too."""
    refused: Lease | None = None
    with ledger.transaction("lease") as tx:
        now = utcnow()
        leases = fold(e for e in tx.records() if isinstance(e, LeaseEvent) and e.task_id == task_id).get(task_id, [])
        cur = latest(leases)
        if cur is not None and adopt is not None and cur.lease_id == adopt:
            event = _event(task_id, adopt, "adopted", holder)
        elif cur is not None and (why := cur.gone(now)) is None:
            event = _event(task_id, cur.lease_id, "refused", holder, reason=f"held by {cur.describe()}")
            refused = cur
        else:
            event = _event(task_id, new_lease_id(), "taken_over" if cur else "taken", holder,
                           previous=cur.lease_id if cur else None, reason=why if cur else None)  # fmt: skip
        tx.append(event)
    if refused is not None:
        raise held_error(refused)
    mine = fold([*_events_of(ledger, task_id)]).get(task_id, [])
    lease = next(x for x in reversed(mine) if x.lease_id == event.lease_id)
    replaced = next((x for x in mine if x.lease_id == lease.previous), None) if event.event == "taken_over" else None
    return lease, replaced


def _events_of(ledger: Ledger, task_id: str) -> Iterator[LeaseEvent]:
    return (e for e in ledger.read_as("lease", LeaseEvent) if e.task_id == task_id)


def request_stop(ledger: Ledger, task_id: str, *, by: str, note: str = "", then: str = "block") -> Lease | None:
    """A person's stop for the task's live holder, recorded on its lease -> that lease; None when nothing live holds
    the task (the caller then applies the stop itself, holding the lease). A second request is one request; an
    abandon after a stop turns it into an abandon."""
    asked = ask_stop(ledger, task_id, by=by, note=note, then=then)
    return asked[0] if asked is not None else None


def ask_stop(ledger: Ledger, task_id: str, *, by: str, note: str = "", then: str = "block") -> tuple[Lease, bool] | None:
    """`request_stop` -> (the lease, whether this call recorded the request: False when the lease already carried
    it — a double-click's second request, which callers then do not say again)."""
    with ledger.transaction("lease") as tx:
        leases = fold(e for e in tx.records() if isinstance(e, LeaseEvent) and e.task_id == task_id).get(task_id, [])
        cur = latest(leases)
        if cur is None or cur.gone() is not None:
            return None
        recorded = cur.stop is None or (then == "abandon" and cur.stop.then != "abandon")
        if recorded:
            tx.append(_event(task_id, cur.lease_id, "stop_requested", by=by, note=note[:2000], then=then))
    lease = current(ledger, task_id)
    return (lease, recorded) if lease is not None else None


def check(ledger: Ledger, task_id: str, mine: str | None, step: str) -> None:
    """At a safe point (`step`: what the run is about to do): LeaseLost when the lease `mine` is no longer the task's
    (taken over), StopRequested when a person asked the task's holder to stop. `mine` None: a helper process of the
    run (a work-pool unit loop) that holds no lease itself checks the stop only."""
    cur = current(ledger, task_id)
    if mine is not None and (cur is None or cur.lease_id != mine):
        now = cur.describe() if cur is not None else "nobody"
        raise LeaseLost(f"task {task_id}: this run's lease {mine} was taken over (now held by {now}); stopping "
                        f"before {step}", task_id=task_id, lease_id=mine)  # fmt: skip
    if cur is not None and cur.stop is not None:
        stop = cur.stop
        verb = "abandoned" if stop.then == "abandon" else "stopped"
        raise StopRequested(
            f"{verb} by {stop.by}" + (f" ({stop.note})" if stop.note else "") + f" before {step}",
            task_id=task_id, by=stop.by, note=stop.note, then=stop.then, step=step,
        )  # fmt: skip


class HeldLease:
    """A lease this process holds: its heartbeat, its checks, its hand-over and release."""

    def __init__(self, ledger: Ledger, lease: Lease, replaced: Lease | None = None) -> None:
        self.ledger, self.lease, self.replaced = ledger, lease, replaced
        self.lease_id, self.task_id = lease.lease_id, lease.task_id
        self.handed = False  # given to another process or flow run: not this process's to release
        self.waiting_run: str | None = None  # a deployed flow run waits for a person (said at release)
        self._stop = threading.Event()
        self._beat = threading.Thread(target=self._heartbeat, name=f"lease-{self.lease_id}", daemon=True)
        self._beat.start()

    def _heartbeat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            try:
                self.renew()
            except GraphLemonError as exc:  # the ledger cannot take it (a full disk): said, and tried again later
                log.warning("lease %s: heartbeat not recorded: %s", self.lease_id, exc.message)

    def mine(self) -> bool:
        cur = current(self.ledger, self.task_id)
        return cur is not None and cur.lease_id == self.lease_id and not self.handed

    def check(self, step: str) -> None:
        check(self.ledger, self.task_id, self.lease_id, step)

    def renew(self, **fields: str | None) -> None:
        """A heartbeat (with `flow_run_id` when the run learns its Prefect flow run), unless the lease moved on."""
        with self.ledger.transaction("lease") as tx:
            leases = fold(e for e in tx.records() if isinstance(e, LeaseEvent) and e.task_id == self.task_id)
            cur = latest(leases.get(self.task_id, []))
            if cur is not None and cur.lease_id == self.lease_id and not self.handed:
                tx.append(_event(self.task_id, self.lease_id, "renewed", **fields))

    def hand(self, holder: Holder, *, reserve_s: float | None = None) -> None:
        """Give the lease to `holder`: a process this one started (its pid), or a flow run that has not started yet
        (held for it `reserve_s`, default `RESERVE_S`). Recorded only while the lease is still this process's."""
        until = utcnow() + timedelta(seconds=reserve_s or RESERVE_S) if holder.pid is None else None
        with self.ledger.transaction("lease") as tx:
            leases = fold(e for e in tx.records() if isinstance(e, LeaseEvent) and e.task_id == self.task_id)
            cur = latest(leases.get(self.task_id, []))
            if cur is None or cur.lease_id != self.lease_id:
                raise LeaseLost(f"task {self.task_id}: lease {self.lease_id} was taken over before it was handed "
                                f"to {holder.describe()}", task_id=self.task_id, lease_id=self.lease_id)  # fmt: skip
            tx.append(_event(self.task_id, self.lease_id, "handed", holder, reserved_until=until))
        self.handed = True
        self._stop.set()

    def take_slot(self, limit: int, *, on_wait: Callable[[str], None] | None = None) -> None:
        """One of the project's `limit` goal slots for this lease (until it is released or `give_slot`): waits,
        checking for a stop, while every slot is held by a live lease of another task."""
        if limit < 1:
            raise GraphLemonError(ErrorCode.INVALID_PARAM, f"max_concurrent_goals is {limit}; it must be at least 1")
        told = False
        while True:
            with self.ledger.transaction("lease") as tx:
                leases = fold(e for e in tx.records() if isinstance(e, LeaseEvent))
                mine = latest(leases.get(self.task_id, []))
                if mine is None or mine.lease_id != self.lease_id:
                    raise LeaseLost(f"task {self.task_id}: lease {self.lease_id} was taken over while it waited for "
                                    "a goal slot", task_id=self.task_id, lease_id=self.lease_id)  # fmt: skip
                if mine.slot:
                    return
                busy = [x for task, ls in leases.items() if task != self.task_id and (x := latest(ls)) is not None
                        and x.slot and x.gone() is None]  # fmt: skip
                if len(busy) < limit:
                    tx.append(_event(self.task_id, self.lease_id, "slot_taken"))
                    return
            if not told and on_wait is not None:
                on_wait(f"task {self.task_id} waits for a goal slot: {limit} of {limit} in use on this project "
                        f"({', '.join(sorted(x.task_id for x in busy))})")  # fmt: skip
                told = True
            self.check("waiting for a goal slot")
            time.sleep(SLOT_POLL_S)

    def give_slot(self) -> None:
        if self.mine():
            self.ledger.append(_event(self.task_id, self.lease_id, "slot_released"))

    def release(self, task_status: TaskStatus | None, reason: str) -> None:
        """Let go of the lease (with the task's status), unless it was handed on or taken over meanwhile."""
        self._stop.set()
        with self.ledger.transaction("lease") as tx:
            leases = fold(e for e in tx.records() if isinstance(e, LeaseEvent) and e.task_id == self.task_id)
            cur = latest(leases.get(self.task_id, []))
            if cur is not None and cur.lease_id == self.lease_id and not self.handed:
                tx.append(_event(self.task_id, self.lease_id, "released", task_status=task_status,
                                 reason=reason[:500], waiting_run=self.waiting_run))  # fmt: skip


# -- holding a lease for a block of code ----------------------------------------------------------------------

_HELD: contextvars.ContextVar[tuple[HeldLease, ...]] = contextvars.ContextVar("graphlemon_leases", default=())


def holding(ledger: Ledger, task_id: str) -> HeldLease | None:
    """The lease of the task this code runs under (taken by an enclosing `held`), or None."""
    return next((h for h in _HELD.get() if h.task_id == task_id and h.ledger.state_dir == ledger.state_dir), None)


@contextmanager
def held(ledger: Ledger, task_id: str, holder: Holder, *, adopt: str | None = None,
         status: Callable[[], TaskStatus | None] | None = None) -> Iterator[HeldLease]:  # fmt: skip
    """Hold the task's lease for the block: the one an enclosing block holds, else taken now (TASK_HELD if another
    live holder has it). Released at the end with the task's status (`status()`), whatever ends the block."""
    outer = holding(ledger, task_id)
    if outer is not None:
        yield outer
        return
    lease, replaced = take(ledger, task_id, holder, adopt=adopt)
    mine = HeldLease(ledger, lease, replaced)
    mine.waiting_run = waiting_run(ledger, task_id, before=lease.lease_id)  # kept unless this holder runs the loop
    token = _HELD.set((*_HELD.get(), mine))
    reason = "the run ended"
    try:
        yield mine
    except BaseException as exc:
        reason = f"the run ended with {type(exc).__name__}"
        raise
    finally:
        _HELD.reset(token)
        try:
            mine.release(status() if status is not None else None, reason)
        except GraphLemonError as exc:  # a full disk: the holder's process ends anyway, and a gone holder is taken over
            log.warning("lease %s of task %s not released: %s", mine.lease_id, task_id, exc.message)


# -- what a page says of a task's run ---------------------------------------------------------------------------

RunState = Literal["running", "stopping", "interrupted", "idle"]
NEEDS_A_RUN = frozenset({"planning", "coding", "integrating", "validating", "waiting_for_quota"})


def run_state(lease: Lease | None, status: str) -> RunState | None:
    """Is anything running the task, from its lease alone: `running` (a live holder), `stopping` (a live holder a
    person asked to stop), `interrupted` (a working status and no live holder: `graphlemon resume` continues it),
    `idle` (queued and nothing holds it), or None (a person decides next, or the task has ended).
    `lease`: the task's current lease (`current`), or None."""
    if lease is not None and lease.gone() is None:
        return "stopping" if lease.stop is not None else "running"
    if status in NEEDS_A_RUN:
        return "interrupted"
    return "idle" if status == "queued" else None


class LastRun(BaseModel):
    """When the task's last run let go of it: `ended` (it released its lease) or `seen` (its holder is gone without
    releasing: its last heartbeat; it may have run, and written, up to one heartbeat later)."""

    how: Literal["ended", "seen"]
    at: datetime


def last_run(leases: list[Lease]) -> LastRun | None:
    """From the task's leases (`history`): None while a run holds the task, or when no run ever did."""
    lease = leases[-1] if leases else None
    if lease is None or lease.gone() is None:
        return None
    return LastRun(how="ended", at=lease.released) if lease.released else LastRun(how="seen", at=lease.heartbeat)


def action_lease(ledger: Ledger, task_id: str, action_id: str | None) -> Lease | None:
    """The lease a console action took (its id on the lease's holder), or None: a second request carrying the same
    action id is the same action, answered from this lease instead of starting anything."""
    if not action_id:
        return None
    return next((x for x in history(ledger, task_id) if x.holder.action_id == action_id), None)


def leases_by_launch(ledger: Ledger) -> dict[str, Lease]:
    """launch id -> the lease its process held (the first one naming it): how a console launch's task and end are
    known (a goal's task is created by the launched process, whose lease names the launch)."""
    out: dict[str, Lease] = {}
    for task_leases in fold(ledger.read_as("lease", LeaseEvent)).values():
        for x in task_leases:
            if x.holder.launch_id and x.holder.launch_id not in out:
                out[x.holder.launch_id] = x
    return out
