"""Uncaught exceptions: a 5xx where a 4xx was required (or no answer at all), raised inside the providing unit's
own code; and a request a live unit never answered.

The general fact: a request the case expects to be refused (4xx) that is answered 5xx, while a
stack trace of the same step runs through the serving unit's own source files, means that unit's
code raised instead of refusing: an impl_bug of that unit, whatever words the SDD uses. The frame
that names a project file is the place to fix; frames in dependencies (site-packages,
node_modules, the runtime) are skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .matching import Call
from .run_context import RunContext
from .rundir import IntegrationFailure
from .signals import in_window, stack_frames, unit_of_path


@dataclass(frozen=True)
class Uncaught:
    unit_id: str
    file: str  # project-relative source file of the innermost own frame
    line: int  # its line
    where: str  # the file that shows the trace (result.json / http-trace / process.log)
    where_line: int | None
    text: str  # the trace text (one line of it)


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
    result_rel = f"{ctx.run_rel}/result.json"
    texts: list[tuple[str, int | None, str]] = [(result_rel, None, failure.stack or "")]
    if isinstance(failure.got.body, str):
        texts.append((result_rel, None, failure.got.body))
    texts += [
        (f"{ctx.run_rel}/http-trace.ndjson", line, e.response_body)
        for line, e in ctx.trace
        if (e.case, e.step) == (failure.case, failure.step) and isinstance(e.response_body, str)
    ]
    texts += [(f"{ctx.run_rel}/process.log", x.lineno, x.text) for x in ctx.log if in_window(x, failure.ts)]
    by_source: dict[str, list[tuple[str, str, int, int | None, str]]] = {}
    for where, line, text in texts:
        for path, n in stack_frames(text):
            hit = unit_of_path(ctx, path)
            if hit and hit[0] in serving:
                by_source.setdefault(where, []).append((hit[0], hit[1], n, line, text))
    for where in (result_rel, f"{ctx.run_rel}/http-trace.ndjson", f"{ctx.run_rel}/process.log"):
        frames = by_source.get(where)
        if frames:
            # Python prints the innermost frame last ("most recent call last"); JavaScript prints it first
            unit, rel, n, line, text = frames[-1] if rel_is_python(frames[0][1]) else frames[0]
            quote = next((x for x in text.split("\n") if rel.rsplit("/", 1)[-1] in x), text.split("\n")[0])
            return Uncaught(unit, rel, n, where, line, quote.strip()[:200])
    return None


@dataclass(frozen=True)
class Hung:
    """A call of the failing step that got no answer within the client's timeout, from a unit that answered the
    traced calls before and after it."""

    unit_id: str
    line: int  # the unanswered call's line in http-trace.ndjson
    error: str
    before: int  # a call the unit answered before it
    after: int  # and one after it


# a client's own words for giving up on an answer (Node, Go, Python, curl); not a refusal or a reset
_TIMED_OUT = re.compile(r"\btime(?:d)?[ -]?out\b|\btimeout\b|deadline exceeded", re.IGNORECASE)


def hung_request(ctx: RunContext, failure: IntegrationFailure) -> Hung | None:
    """The unit was up and reachable (it answered the calls traced before and after), and the failing step's call
    to it timed out: its handling of that request never answered — the unit's code, not the environment."""
    unanswered = [
        (line, e)
        for line, e in ctx.trace
        if (e.case, e.step) == (failure.case, failure.step) and e.status is None and e.error and e.unit_id
    ]
    if not unanswered or not _TIMED_OUT.search(unanswered[-1][1].error or ""):
        return None
    line, entry = unanswered[-1]
    answered = [n for n, e in ctx.trace if e.unit_id == entry.unit_id and e.status is not None]
    before = [n for n in answered if n < line]
    after = [n for n in answered if n > line]
    if not before or not after or not entry.unit_id:
        return None
    return Hung(entry.unit_id, line, entry.error or "", before[-1], after[0])


def rel_is_python(rel: str) -> bool:
    return rel.endswith(".py")
