"""Every mechanism run on one failing step, each giving typed findings (findings.py); none decides.

    environment   a kind of environment failure in a piece of evidence, with its voice and time (environment_signals.py)
    uncaught      a refusal that became a 5xx, or no answer, with a stack through the serving unit's code (uncaught.py)
    interface     the sides of the step's endpoints compared by structure: SDD, contracts, code, trace
                  (interface_diff.py: path_differs, status_differs, field_missing, limit_violated, status_unproduced)
    calls         a function-level step read call by call: an observed value an SDD statement contradicts
                  (callfindings.py)

The decider (decider.py) reads the findings; the agent's tools return them as facts.
"""

from __future__ import annotations

import json
import re

from ..models import SddPatch
from .callfindings import CallFindings
from .cite import Citer
from .environment_signals import EnvSignal, environment_signals
from .findings import Element, Finding, describe
from .interface import SIDE_NAMES, Quote
from .interface_diff import InterfaceFinding, compare, unproduced
from .run_context import RunContext
from .rundir import IntegrationFailure
from .steps import step_calls
from .uncaught import refused_became_error, uncaught_in_provider
from .voice import Said

# An environment finding is words (an errno, a message) someone printed: a hypothesis, never a verdict to apply.
# Below auto-apply; its action is the one re-run that verifies it (passing confirms the environment, failing the
# same way drops the hypothesis: history.retriage). On the failing call's own transport error a little higher.
ENV_ON_STEP, ENV_AROUND = 0.7, 0.65
UNCAUGHT = 0.84
CONFIRMED, TWO_SIDES, UNLINKED, DAMAGED = 0.85, 0.76, 0.7, 0.6
_ENV_WORDS = {
    "port_in_use": "could not bind its port (EADDRINUSE: another process held it)",
    "disk_full": "ran out of disk space (ENOSPC)",
    "dns": "could not resolve a host name (the resolver failed: try again)",
    "out_of_resources": "ran out of memory, file handles or processes",
    "missing_dependency": "lacked a package that is not installed",
    "backing_service": "could not reach a backing service (an address no unit of the project serves)",
    "external_service": "depended on a service outside the project that refused or failed the call (429 / 5xx)",
}


def findings_of(ctx: RunContext, failure: IntegrationFailure) -> list[Finding]:
    cite = Citer(ctx)
    calls = step_calls(ctx, failure)
    out = [_env_finding(ctx, failure, cite, s) for s in _distinct(environment_signals(ctx, failure))]
    refused = failure.got.error and re.search(r"ECONNREFUSED|connection refused", failure.got.error, re.I)
    no_answer = failure.got.error is not None and not refused  # nothing listened: no code served the request
    if no_answer or refused_became_error(failure):
        raised = uncaught_in_provider(ctx, failure, calls)
        if raised is not None:
            out.append(_uncaught(ctx, failure, cite, raised))
    structural = compare(ctx, failure, calls)[:1]
    if not structural and calls[-1].path is not None:
        never = unproduced(ctx, failure, calls[-1])
        structural = [never] if never is not None else []
    out += [interface_finding(ctx, failure, cite, f) for f in structural]
    if calls[-1].path is None:
        found = CallFindings(ctx, failure).contradicted_calls()
        out += [found] if found is not None else []
    return out


def _distinct(signals: list[EnvSignal]) -> list[EnvSignal]:
    """One finding per kind and voice (the first such quote): the same kind said twice by one voice is one fact."""
    seen, out = set(), []
    for s in signals:
        key = (s.kind, s.said.voice, s.said.speaker)
        if key not in seen:
            seen.add(key)
            out.append(s)
    return out


def _env_finding(ctx: RunContext, failure: IntegrationFailure, cite: Citer, s: EnvSignal) -> Finding:
    said = s.said
    who = f"{said.speaker} ({said.voice})" if said.speaker else f"the {said.voice}"
    root = (
        f"{who} reports that the run {_ENV_WORDS[s.kind]}, {said.when} the failing step ({said.where()}); so case "
        f"{failure.case} step {failure.step} {_outcome(failure)}: if the environment failed, not the code, one re-run "
        f"passes — re-run once to check (failing the same way drops this hypothesis)"
    )
    on_step = failure.got.error is not None and said.rel.endswith("result.json") and said.voice == "os"
    evidence = [_cite_said(cite, said)]
    return Finding("infra_flake", [], ENV_ON_STEP if on_step else ENV_AROUND, root, evidence, f"infra:{s.kind}",
                   said=[said])  # fmt: skip


def _uncaught(ctx: RunContext, failure: IntegrationFailure, cite: Citer, raised) -> Finding:
    trace = cite.line(raised.where, raised.where_line, raised.text[:40]) if raised.where_line else None
    wanted = describe(failure.expected)
    wanted = f"the request to be refused with {wanted}" if refused_became_error(failure) else wanted
    by = "its own code" if raised.raised_by_unit else "a library under its code (a service's or the OS's answer)"
    root = (
        f"{raised.unit_id} raises an uncaught exception in {by} ({raised.file}:{raised.line}) for case "
        f"{failure.case} step {failure.step}, so it answers {describe(failure.got)} where the case requires {wanted}"
    )
    said = [Said(raised.where, raised.where_line, raised.text, "unit", raised.unit_id, "at")]
    rule = "impl:uncaught" if raised.raised_by_unit else "impl:uncaught_relayed"
    evidence = [trace, cite.line(raised.file, raised.line)]
    return Finding("impl_bug", [raised.unit_id], UNCAUGHT, root, evidence, rule, said=said)


def interface_finding(ctx: RunContext, failure: IntegrationFailure, cite: Citer, found: InterfaceFinding) -> Finding:
    """A typed disagreement of the interface model as a finding: the two lines, their sides, who confirms."""
    evidence = [cite.line(found.a.rel, found.a.line), cite.line(found.b.rel, found.b.line)]
    said = [_side_said(ctx, cite, found.a_side, found.a, found), _side_said(ctx, cite, found.b_side, found.b, found)]
    prefix = {"contract_mismatch": "contract", "impl_bug": "impl"}.get(found.category, "spec")
    rule = f"{prefix}:{found.kind}"
    confirmed = tuple(dict.fromkeys((*found.agree, *found.with_b)))
    hints = [f"interface: {found.shows()}"]
    what = f"case {failure.case} step {failure.step} {_outcome(failure)}"
    if found.category == "spec_ambiguous":
        root = f"{found.a_says} ({found.a.rel}:{found.a.line}), but {found.b_says} ({found.b.rel}:{found.b.line}); so {what}"
        return Finding("spec_ambiguous", [], 0.55, root, evidence, rule, hints=hints, said=said, confirmed_by=confirmed,
                       l3_question=f"Which holds for {found.endpoint}: {found.subject}?")  # fmt: skip
    unit = found.blamed[0]
    confidence = UNLINKED if found.kind == "status_unproduced" else CONFIRMED if found.corroborated else TWO_SIDES
    if any("\ufffd" in s.text for s in said) and confidence > DAMAGED:
        confidence = DAMAGED  # a line that disagrees was read with undecodable bytes replaced
        hints.append(f"confidence capped at {DAMAGED}: a line that disagrees holds bytes that are not UTF-8")
    root = (
        f"{found.b_says} ({SIDE_NAMES[found.b_side]}, {found.b.rel}:{found.b.line}) where {found.a_says} "
        f"({SIDE_NAMES[found.a_side]}, {found.a.rel}:{found.a.line}), so {what}"
    )
    if found.category == "impl_bug":
        return Finding("impl_bug", [unit], confidence, f"{unit} does not do what its interface states: {root}",
                       evidence, rule, hints=hints, said=said, confirmed_by=confirmed)  # fmt: skip
    patch = SddPatch(
        target_section=f"#unit-{unit}",
        op="update_contract",
        text=f"{found.endpoint}: {found.a_says}; {unit}'s contract.json must say the same ({found.kind}: {found.b_says}).",
    )
    element = _element(found)
    return Finding("contract_mismatch", [unit], confidence, f"{unit}'s contract.json disagrees with the interface: {root}",
                   evidence, rule, patch=patch, hints=hints, said=said, confirmed_by=confirmed,
                   element=element)  # fmt: skip


def _element(found: InterfaceFinding) -> Element | None:
    spec = found.a if found.a_side == "spec" else found.b if found.b_side == "spec" else None
    if spec is None:
        return None
    method, _, path = found.endpoint.partition(" ")
    statuses = (int(found.subject),) if found.subject.isdigit() else ()
    others = tuple(w for w in (found.a_says, found.b_says) for w in w.split() if w.startswith("/") and w != path)
    provider = found.blamed[0] if found.blamed and found.a_side != "consumer" and found.b_side != "consumer" else None
    return Element(f"{spec.rel}:{spec.line}", None if method == "*" else method, path, statuses, others, provider)


def _side_said(ctx: RunContext, cite: Citer, side: str, at: Quote, found: InterfaceFinding) -> Said:
    lines = cite.lines(at.rel)
    text = lines[at.line - 1].strip() if 0 < at.line <= len(lines) else ""
    speaker = None if side == "spec" else found.blamed[0] if found.blamed else None
    return Said(at.rel, at.line, text, "sdd" if side == "spec" else "unit", speaker, "at", side=side)


def _cite_said(cite: Citer, said: Said) -> str | None:
    if said.line is not None:
        if said.rel.endswith("http-trace.ndjson"):
            return cite.trace(said.line)
        return cite.line(said.rel, said.line, said.text.strip()[:30] or None)
    first = said.text.strip().split("\n")[0][:60]
    needle = json.dumps(first)[1:-1]  # result.json holds its strings JSON-escaped
    at = cite.find(said.rel, needle)
    return cite.line(said.rel, at, needle[:30]) if at else None


def _outcome(failure: IntegrationFailure) -> str:
    got, expected = describe(failure.got), describe(failure.expected)
    return f"received {got} instead of {expected}" if got != expected else "could not run"
