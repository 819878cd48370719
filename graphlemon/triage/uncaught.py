"""Uncaught exceptions: a 5xx where a 4xx was required (or no answer at all), raised inside the providing unit's
own code.

The general fact: a request the case expects to be refused (4xx) that is answered 5xx, while a stack trace of the
same step runs through the serving unit's own source files, means that unit's code raised instead of refusing.
Who raised is read from the stack's innermost frame: the unit's own file (`raised_by_unit`) is the unit's code
failing; a frame of a library or the runtime (site-packages, node_modules, the standard library) is that library
reporting what an outside service or the operating system answered, through the unit's stack — a fact about the
unit's handling, not proof of its bug (the decider keeps only the first). A unit that answered 5xx after a unit
it called answered 5xx in the same step relayed it: when that upstream unit's own stack is in the run, it is the one
that raised.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .run_context import RunContext
from .rundir import IntegrationFailure
from .steps import Call
from .voice import log_ts, stack_frames, unit_of_path

_ANY_FRAME = re.compile(
    r"(?:File \")?([\w@.~/\\:<>-]+\.(?:py|js|mjs|cjs|ts|tsx|jsx|go|rs|rb|java|kt|php|cs))(?:\"?, line |:)(\d+)"
)
_WINDOW_S = 60


@dataclass(frozen=True)
class Uncaught:
    unit_id: str
    file: str  # project-relative source file of the innermost own frame
    line: int  # its line
    where: str  # the file that shows the trace (result.json / http-trace / process.log)
    where_line: int | None
    text: str  # the trace text (one line of it)
    raised_by_unit: bool  # the innermost frame of all is the unit's own file


def refused_became_error(failure: IntegrationFailure) -> bool:
    """The case required a refusal (4xx) and got a server error (5xx)."""
    want, got = failure.expected.status, failure.got.status
    return want is not None and got is not None and 400 <= want < 500 and got >= 500


def uncaught_in_provider(ctx: RunContext, failure: IntegrationFailure, calls: list[Call]) -> Uncaught | None:
    """The innermost own frame of a trace on this step that lies in a unit which answered it with a 5xx."""
    serving = {c.provider for c in calls if c.provider and (c.status is None or c.status >= 500)}
    serving |= {
        e.unit_id for _l, e in ctx.trace if (e.case, e.step) == (failure.case, failure.step) and (e.status or 0) >= 500
    }
    if len(failure.involves) == 1:
        serving.add(failure.involves[0])
    upstream = {c.provider for c in calls[:-1] if c.provider and c.status is not None and c.status >= 500}
    result_rel, log_rel = f"{ctx.run_rel}/result.json", f"{ctx.run_rel}/process.log"
    texts: list[tuple[str, int | None, str]] = [(result_rel, None, failure.stack or "")]
    if isinstance(failure.got.body, str):
        texts.append((result_rel, None, failure.got.body))
    texts += [
        (f"{ctx.run_rel}/http-trace.ndjson", line, e.response_body)
        for line, e in ctx.trace
        if (e.case, e.step) == (failure.case, failure.step) and isinstance(e.response_body, str)
    ]
    texts += [(log_rel, x.lineno, x.text) for x in ctx.log if _near(log_ts(x.text), failure)]
    own: dict[str, list[tuple[str, str, int, int | None, str]]] = {}
    every: dict[str, list[str]] = {}  # each source's frames in order, a library's included
    for where, line, text in texts:
        every.setdefault(where, []).extend(m.group(1) for m in _ANY_FRAME.finditer(text))
        for path, n in stack_frames(text):
            hit = unit_of_path(ctx, path)
            if hit and hit[0] in serving:
                own.setdefault(where, []).append((hit[0], hit[1], n, line, text))
    for where in (result_rel, f"{ctx.run_rel}/http-trace.ndjson", log_rel):
        frames = own.get(where)
        relayed = [f for f in frames or [] if f[0] in upstream]  # the unit that raised first, not the relay
        frames = relayed or frames
        if frames:
            # Python prints the innermost frame last ("most recent call last"); JavaScript prints it first
            python = frames[0][1].endswith(".py")
            unit, rel, n, line, text = frames[-1] if python else frames[0]
            quote = next((x for x in text.split("\n") if rel.rsplit("/", 1)[-1] in x), text.split("\n")[0])
            chain = [m.group(1) for m in _ANY_FRAME.finditer(text)] if relayed else every[where]
            innermost = chain[-1 if python else 0]
            raised = (unit_of_path(ctx, innermost) or ("", ""))[0] == unit
            return Uncaught(unit, rel, n, where, line, quote.strip()[:200], raised)
    return None


def _near(ts, failure: IntegrationFailure) -> bool:
    if ts is None or failure.ts is None:
        return True
    failed = failure.ts if failure.ts.tzinfo else failure.ts.replace(tzinfo=ts.tzinfo)
    return abs((ts - failed).total_seconds()) <= _WINDOW_S
