"""Uncaught exceptions: a 5xx where a 4xx was required, raised inside the providing unit's own code.

The general fact: a request the case expects to be refused (4xx) that is answered 5xx, while a
stack trace of the same step runs through the serving unit's own source files, means that unit's
code raised instead of refusing: an impl_bug of that unit, whatever words the SDD uses. The frame
that names a project file is the place to fix; frames in dependencies (site-packages,
node_modules, the runtime) are skipped.
"""

from __future__ import annotations

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


def rel_is_python(rel: str) -> bool:
    return rel.endswith(".py")
