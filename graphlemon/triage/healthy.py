"""Environment signals that the run itself contradicts.

An environment signal (a time-out, a kill) says the infrastructure failed. These general facts show it did not:

- answered: every signal is a time-out, and every call of the failing step that the trace shows was answered by a
  unit (a status below 500, no transport error). The services were up and reachable; the time-out is the case's
  own deadline for a state the units never reached (a message never delivered, a record never written).
- own loop: every signal is a kill (SIGKILL, exit 137, a budget exceeded) of a unit the case involves, and the
  case's traced calls, all answered with success by another unit, repeat one round of identical requests with
  identical answers. The killed unit kept asking for what it already had: the kill ends a loop of its own code.
- own code: every signal is a SIGBUS or a checksum mismatch, and the failure's own message or stack runs through
  the project's code. Packages are verified and binaries linked before any unit code runs; once the unit's code
  is on the stack, the bus error or the checksum it raised is about its own data.
- answered, for a gRPC UNAVAILABLE: every call of the failing step that the trace shows was answered; the
  transport did not go away.
- own address: every signal is an EADDRNOTAVAIL on a bind or listen. A client out of ephemeral ports fails to
  *connect*; a server that cannot bind its configured address was given an address the host does not have.
- answered, for a dependency that said it was not ready (starting, electing a leader, restarting), an operating-system
  error of the machine, a process stopped by a signal or a failed TLS handshake: every call of the failing step was
  answered below 500; whatever failed did not stand between the step and its answer.
- compared: the runner crashed (`crashed` in result.json), yet the failing step got an answer and the case compared
  it with its expectation. The crash came after the step; the difference it reports is the units'.

A contradicted signal does not decide the verdict: the decision flow goes on to the interface comparison and the
steps after it (docs/triage.md, "Environment signals the run contradicts").
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from .run_context import RunContext
from .rundir import HttpTraceEntry, IntegrationFailure
from .signals import Signal, units_in_text

# kinds that fail a call when they bear on it: a call answered below 500 was served despite them
_SERVED_DESPITE = frozenset({"rpc_unavailable", "dependency_unavailable", "os_error", "signaled", "tls"})
_BIND = re.compile(r"\b(?:bind|listen)\b", re.IGNORECASE)  # a server taking its address, not a client connecting


@dataclass(frozen=True)
class Healthy:
    """Why the run contradicts its environment signals, and the trace lines that show it."""

    reason: str
    lines: tuple[int, ...]


def run_contradicts(ctx: RunContext, failure: IntegrationFailure, signals: list[Signal]) -> Healthy | None:
    if not signals:
        return None
    kinds = {s.kind for s in signals}
    if kinds == {"timeout"}:
        return _answered(ctx, failure)
    if kinds == {"killed"}:
        return _own_loop(ctx, failure, signals)
    if kinds <= _SERVED_DESPITE:
        return _answered(ctx, failure)  # the step's calls were answered: the failure stood outside their way
    if kinds == {"runner_crashed"}:
        return _compared(failure)
    if kinds <= {"bus_error", "checksum_mismatch"}:
        return _own_code(ctx, failure)
    if kinds == {"address_unavailable"} and all(_BIND.search(s.text) for s in signals):
        reason = "the address could not be bound: the unit's configured listen address, not an exhausted port range"
        return Healthy(reason, tuple(s.line for s in signals if s.line is not None))
    return None


def _compared(failure: IntegrationFailure) -> Healthy | None:
    got = failure.got
    if got.error is not None or (got.status is None and got.value is None and got.body is None):
        return None
    reason = "the runner crashed after the failing step got an answer and compared it with the case's expectation"
    return Healthy(reason, ())


def _own_code(ctx: RunContext, failure: IntegrationFailure) -> Healthy | None:
    units = units_in_text(ctx, f"{failure.message or ''}\n{failure.stack or ''}")
    if not units:
        return None
    reason = f"the failure's stack runs through {', '.join(units)}'s own code: the error is about its own data"
    return Healthy(reason, ())


def _answered(ctx: RunContext, failure: IntegrationFailure) -> Healthy | None:
    step = [(n, e) for n, e in ctx.trace if (e.case, e.step) == (failure.case, failure.step)]
    if not step or any(e.status is None or e.status >= 500 or e.error for _n, e in step):
        return None
    units = sorted({e.unit_id for _n, e in step if e.unit_id})
    reason = (
        f"every call of the failing step was answered ({len(step)} traced, by {', '.join(units) or 'the units'}): "
        "the services were up, the time-out is the case waiting for a state the units never reached"
    )
    return Healthy(reason, tuple(n for n, _e in step))


def answered_report(ctx: RunContext, failure: IntegrationFailure) -> bool:
    """Every call the trace shows for the step was answered, and the step either has no request of its own (a CLI
    run, a job: its error is the unit's report of those answers) or got an answer itself (its error is the case's
    own deadline, a poll that never saw the state it waited for). Either way the error is no missing answer."""
    step = [e for _n, e in ctx.trace if (e.case, e.step) == (failure.case, failure.step)]
    answered = bool(step) and all(e.status is not None and not e.error for e in step)
    return answered and (failure.request is None or failure.got.status is not None)


def _own_loop(ctx: RunContext, failure: IntegrationFailure, signals: list[Signal]) -> Healthy | None:
    calls = [(n, e) for n, e in ctx.trace if e.case == failure.case]
    if len(calls) < 2 or any(e.status is None or not 200 <= e.status < 300 or e.error for _n, e in calls):
        return None
    keys = [_key(e) for _n, e in calls]
    period = _period(keys)
    if period is None:
        return None
    servers = {e.unit_id for _n, e in calls}
    killed = {u for u in failure.involves if u not in servers and any(_names(s.text, u) for s in signals)}
    if not killed:
        return None
    reason = (
        f"{', '.join(sorted(killed))} was killed after repeating the same {period} request(s) "
        f"{len(keys) // period} times with the same successful answers: the kill ends its own loop"
    )
    return Healthy(reason, tuple(n for n, _e in calls[: period + 1]))


def _key(entry: HttpTraceEntry) -> str:
    body = json.dumps(entry.response_body, sort_keys=True, default=str)
    return f"{entry.method} {entry.url} {entry.status} {body}"


def _period(keys: list[str]) -> int | None:
    """The length of the shortest round that the whole sequence repeats at least twice, if any."""
    for k in range(1, len(keys) // 2 + 1):
        if all(keys[i] == keys[i % k] for i in range(len(keys))):
            return k
    return None


def _names(text: str, unit: str) -> bool:
    words = text.replace("[", " ").replace("]", " ").replace(":", " ").split()
    return unit in words


__all__ = ["Healthy", "answered_report", "run_contradicts"]
