"""The calls of the failing step: every traced HTTP exchange of its case step, upstream calls first and the failing
request last, each with the unit that served it (the trace's `unit_id`, else the unit whose contract or code
declares the endpoint)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from .run_context import RunContext
from .rundir import IntegrationFailure
from .sdd import path_matches


@dataclass
class Call:
    """One HTTP exchange of the failing step (or the failing step itself when it made no traced call)."""

    method: str | None
    path: str | None
    provider: str | None
    status: int | None
    body: Any
    error: str | None
    trace_line: int | None
    failing: bool


def step_calls(ctx: RunContext, failure: IntegrationFailure) -> list[Call]:
    """The traced calls of the failing step, upstream calls first and the failing request last."""
    entries = [(line, e) for line, e in ctx.trace if e.case == failure.case and e.step == failure.step]
    req = failure.request
    failing_at = None
    if req is not None:
        for i, (_line, e) in enumerate(entries):
            if e.method == req.method and path_matches(urlsplit(e.url).path or "/", req.path):
                failing_at = i
    elif entries:
        failing_at = len(entries) - 1
    calls = []
    for i, (line, e) in enumerate(entries):
        if i == failing_at:
            continue
        path = urlsplit(e.url).path or "/"
        calls.append(
            Call(
                e.method,
                path,
                provider_of(ctx, e.method, path, e.unit_id),
                e.status,
                e.response_body,
                e.error,
                line,
                False,
            )
        )
    got = failure.got
    method, path = (req.method, req.path) if req else (None, None)
    trace_line, hint = (
        (entries[failing_at][0], entries[failing_at][1].unit_id) if failing_at is not None else (None, None)
    )
    provider = provider_of(ctx, method, path, hint) if path else None
    calls.append(
        Call(
            method,
            path,
            provider,
            got.status,
            got.body if got.body is not None else got.value,
            got.error,
            trace_line,
            True,
        )
    )
    return calls  # fmt: skip


def provider_of(ctx: RunContext, method: str | None, path: str | None, hint: str | None) -> str | None:
    """The unit serving (method, path): the trace's unit, else the unit whose contract or code declares it."""
    if hint and hint in ctx.units.ids():
        return hint
    if path is None:
        return None
    for unit_id, contract in ctx.contracts.items():
        if any(ep.method == method and path_matches(ep.path, path) for ep in contract.exports.http):
            return unit_id
    for unit_id in ctx.units.ids():
        if ctx.code_diff(unit_id).route(method, path):
            return unit_id
    return None
