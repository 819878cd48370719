"""Consumer or provider: which side of an upstream call departs from the agreed interface.

A consumer's contract.json (`consumes`) does not accept what its provider answered. That alone says the two
contracts disagree, not which one is wrong. The agreed interface is the SDD's statement of the endpoint; the
two contracts are compared with it by structure — the statuses each side states for the endpoint:

- the provider answered a status the SDD states and the consumer does not accept         → the consumer departs
  (below auto-apply unless it is the only status of its class the SDD states: a refusal may be meant for
  another situation, and a consumer need not take every refusal);
- the SDD states a status of the answered one's class that the consumer awaits and the
  provider's contract lacks (the provider answers 400 where the SDD and the consumer say 409) → the provider departs;
- both at once (the SDD states the answered status and the one the provider lacks): the provider, since its
  contract lacks what the SDD requires, but below the auto-apply bar — which statement fits the situation is
  not a question of structure;
- no SDD statement about the endpoint, or two SDD statements that give its answers of that class differently:
  there is no agreed interface to judge by, and the verdict names the doubt instead of guessing.

A consumer need not accept every status the SDD states (it handles the answers its own requests can get); a
provider must be able to give every status the SDD states. That asymmetry is why a consumer that awaits a
subset of the SDD's statuses agrees with the SDD, and a provider that lacks one departs from it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit

from .code_inputs import header_reads
from .interface import Operation, Quote, Side
from .interface_diff import InterfaceFinding, finding_between
from .interface_sdd import code_spans
from .interface_sides import Interfaces
from .matching import Call
from .run_context import RunContext
from .rundir import IntegrationFailure
from .sdd import path_matches


@dataclass(frozen=True)
class SideCheck:
    """The side that departs (`finding`), or why none can be named (`doubt`)."""

    finding: InterfaceFinding | None = None
    doubt: str | None = None


def consumer_or_provider(ctx: RunContext, call: Call, consumer: Operation) -> SideCheck:
    """Judge a consumer and the provider of `call` against the SDD's statement of the endpoint."""
    got, provider, m, path = call.status, call.provider, call.method, call.path or "/"
    if got is None or provider is None or consumer.unit is None:
        return SideCheck(doubt="the call has no status or no provider to compare")
    ifs = Interfaces(ctx)
    ep = f"{m} {consumer.path}"
    contract = next(iter(ifs.of("contract", provider, m, path)), None)
    if contract is None:
        return SideCheck(doubt=f"{provider}'s contract.json does not state {ep}: no provider side to compare")
    specs = [op for op in ifs.of("spec", provider, m, path) if op.statuses]
    if not specs:
        return SideCheck(doubt=f"the SDD states no answer of {ep}: no agreed interface to judge the two contracts by")
    classes = {frozenset(s for s in op.statuses if s // 100 == got // 100) for op in specs}
    if len(classes) > 1:
        return SideCheck(doubt=f"the SDD's statements of {ep} give its {got // 100}xx answers differently")
    stated = {s: at for op in specs for s, at in op.statuses.items()}
    spec = specs[0]
    lacking = sorted(
        s for s in stated if s in consumer.statuses and s not in contract.statuses and s // 100 == got // 100
    )
    accepted = got in consumer.statuses  # the consumer takes the answer: a lacking status is a weaker link
    consumer_departs = got in stated and got in contract.statuses and not accepted
    trace = Quote(f"{ctx.run_rel}/http-trace.ndjson", call.trace_line) if call.trace_line else None
    declared = "/".join(str(s) for s in sorted(contract.statuses))
    if lacking:
        want = lacking[0]
        code = next(iter(ifs.of("code", provider, m, path)), None)
        with_b = (("trace",) if got in contract.statuses and trace else ()) + (
            ("code",) if code is not None and got in code.statuses and want not in code.statuses else ()
        )
        also = f"; the SDD states {got} as well" if consumer_departs else ""
        found = finding_between(
            "status_differs", "contract_mismatch", (provider,), spec, str(want),
            "spec", stated[want], f"{ep} answers {want} (which {consumer.unit} awaits){also}",
            "contract", contract.statuses.get(got, contract.at), f"{provider} answers {declared} (not {want})",
            () if consumer_departs or accepted else ("consumer",), () if consumer_departs or accepted else with_b,
        )  # fmt: skip
        return SideCheck(found)
    if consumer_departs:
        # the only answer of its class the SDD states (a success) cannot be meant for another situation; one of
        # several refusals may be: a consumer need not take every refusal, so that is below auto-apply
        only = [s for s in stated if s // 100 == got // 100] == [got]
        takes = "/".join(str(s) for s in sorted(consumer.statuses))
        found = finding_between(
            "status_differs", "contract_mismatch", (consumer.unit,), spec, str(got),
            "spec", stated[got], f"{ep} answers {got}",
            "consumer", consumer.at, f"{consumer.unit} accepts only {takes} from {provider}",
            (("contract",) + (("trace",) if trace else ())) if only else (),
        )  # fmt: skip
        return SideCheck(found)
    return SideCheck(doubt=f"the SDD states no {got // 100}xx answer of {ep} that either contract departs from")


def side_checks(ctx: RunContext, failure: IntegrationFailure, calls: list[Call]) -> list[SideCheck]:
    """Every upstream call of the step that a consumer in the case declares, judged: a consumer that does not
    accept the answer, or a provider whose contract lacks a status of the answer's class that the SDD states
    and the consumer awaits (below auto-apply when the consumer took the answer)."""
    ifs = Interfaces(ctx)
    out = []
    for call in calls[:-1]:
        if call.status is None or call.provider is None or call.path is None:
            continue
        for consumer in ifs.of("consumer", call.provider, call.method, call.path):
            if consumer.unit in failure.involves and consumer.statuses:
                checked = consumer_or_provider(ctx, call, consumer)
                if call.status not in consumer.statuses or checked.finding is not None:
                    out.append(checked)
    return out


# -- request inputs: where the consumer puts an input and where the provider reads it ---------------------------

_PLACES = {"query": "query parameter", "headers": "header", "header": "header", "body": "body field"}


def input_sides(ctx: RunContext, failure: IntegrationFailure, calls: list[Call]) -> list[InterfaceFinding]:
    """An upstream call refused (4xx) where the step needed success, whose consumer sends an input the provider's
    contract reads elsewhere (a header for a query parameter, another name): the side whose input the SDD names
    (a code span in the provider's section: `X-Apiary-Key`, `?key=`) agrees with it; the other departs."""
    if not (failure.expected.status and 200 <= failure.expected.status < 300):
        return []
    out: list[InterfaceFinding] = []
    for call in calls[:-1]:
        if call.provider is None or call.path is None or not (call.status and call.status < 500):
            continue
        refused = 400 <= call.status < 500  # the step needed the call to succeed: the input explains the failure
        provider_inputs = _declared_inputs(ctx, call.provider, None, call)
        named = _sdd_names(ctx, call.provider)
        for unit in (u for u in failure.involves if u != call.provider):
            declared = _declared_inputs(ctx, unit, call.provider, call)
            sent = declared or _traced_inputs(ctx, call)  # a consumer that declares none: what it did send
            only_p = {k: v for k, v in provider_inputs.items() if k not in sent}
            only_c = {k: v for k, v in sent.items() if k not in provider_inputs}
            said_p = [(k, named[k[1]]) for k in only_p if k[1] in named]
            said_c = [(k, named[k[1]]) for k in only_c if k[1] in named]
            if not only_p or not only_c or bool(said_p) == bool(said_c):
                continue  # no input on one side only, or the SDD names both or neither: no side is shown to depart
            spec = next(iter(Interfaces(ctx).of("spec", call.provider, call.method, call.path)), None)
            ep = f"{call.method} {spec.path if spec else call.path}"
            shown = refused and len(only_p) == len(only_c) == 1  # one input for one, and it explains the refusal
            if said_c:
                (place, name), at = said_c[0]
                other, b_at = next(iter(only_p.items()))
                carried = ("trace",) if _carried(call, ctx, place, name) else ()
                agree = (("consumer",) if declared else ()) + carried if shown else ()
                out.append(finding_between(
                    "input_differs", "contract_mismatch", (call.provider,), spec or _bare(call, at), f"{_PLACES[place]} {name}",
                    "spec", at, f"{ep} takes the {_PLACES[place]} {name}", "contract", b_at,
                    f"{call.provider} reads the {_PLACES[other[0]]} {other[1]} instead", agree,
                ))  # fmt: skip
            elif declared:  # a consumer's declared input; what the trace shows it sent is no contract to blame
                (place, name), at = said_p[0]
                other, b_at = next(iter(only_c.items()))
                out.append(finding_between(
                    "input_differs", "contract_mismatch", (unit,), spec or _bare(call, at), f"{_PLACES[place]} {name}",
                    "spec", at, f"{ep} takes the {_PLACES[place]} {name}", "consumer", b_at,
                    f"{unit} sends the {_PLACES[other[0]]} {other[1]} instead", ("contract",) if shown else (),
                ))  # fmt: skip
    return out


def header_unread(ctx: RunContext, failure: IntegrationFailure, calls: list[Call]) -> list[InterfaceFinding]:
    """A call refused (4xx) where the step needed success, that carried a header the SDD names which the provider's
    code never reads, while the code reads a header the SDD does not name and the call did not carry: the code
    departs (impl_bug; contract_mismatch when the provider's contract declares the code's header). Corroborated
    (auto-apply) only when one header stands for one: the request's one named header, the code's one other read."""
    if not (failure.expected.status and 200 <= failure.expected.status < 300):
        return []
    out: list[InterfaceFinding] = []
    for call in calls:
        if call.provider is None or not (call.status and 400 <= call.status < 500):
            continue
        entry = next((e for n, e in ctx.trace if n == call.trace_line), None)
        headers = entry.request_headers if entry is not None else (failure.request.headers if failure.request else {})
        sent = {k.lower() for k in headers or {}}
        reads = header_reads(ctx.code.get(call.provider, []))
        named = _sdd_names(ctx, call.provider)
        read = {r.name.lower() for r in reads}
        said_sent = sorted(h for h in sent if h in named and h not in read)
        unsaid = [r for r in reads if r.name.lower() not in named and r.name.lower() not in sent]
        if not said_sent or not unsaid:
            continue
        spec = next(iter(Interfaces(ctx).of("spec", call.provider, call.method, call.path or "/")), None)
        ep = f"{call.method} {spec.path if spec else call.path}"
        header, code = said_sent[0], unsaid[0]
        swapped = len(said_sent) == 1 and len({r.name.lower() for r in unsaid}) == 1  # one header for one: shown
        agree: tuple[Side, ...] = ("trace",) if swapped else ()
        declared = _declared_inputs(ctx, call.provider, None, call).get(("headers", code.name.lower()))
        a = (spec or _bare(call, named[header]), f"header {header}", "spec", named[header],
             f"{ep} takes the header {_named_as(named, header)}")  # fmt: skip
        says = f"{call.provider}'s code reads the header {code.name} instead"
        if declared is not None:
            out.append(finding_between("input_differs", "contract_mismatch", (call.provider,), *a, "contract",
                                       declared, says, agree, ("code",) if swapped else ()))  # fmt: skip
        else:
            out.append(finding_between("input_differs", "impl_bug", (call.provider,), *a, "code",
                                       Quote(code.rel, code.line), says, agree))  # fmt: skip
    return out


def _named_as(named: dict[str, Quote], key: str) -> str:
    return next((k for k in named if k.lower() == key and k != key), key)


def _declared_inputs(ctx: RunContext, unit: str, provider: str | None, call: Call) -> dict[tuple[str, str], Quote]:
    """(place, name) → line of each request input a contract.json declares for the endpoint: its `exports`
    (`provider` None) or what it `consumes` from `provider`. Header names are compared case-insensitively."""
    rel = ctx.contract_rel(unit)
    try:
        raw = json.loads(ctx.file_text(rel))
    except (OSError, ValueError):
        return {}
    eps = (raw.get("exports") or {}).get("http") if provider is None else raw.get("consumes")
    lines = ctx.file_text(rel).split("\n")
    for ep in eps if isinstance(eps, list) else []:
        if not isinstance(ep, dict) or not isinstance(ep.get("path"), str) or not _inputs_of(ep):
            continue
        if provider is not None and ep.get("unit_id") != provider:
            continue
        if str(ep.get("method", "")).upper() != call.method or not path_matches(ep["path"], call.path or "/"):
            continue
        start = next((n for n, x in enumerate(lines, 1) if f'"{ep["path"]}"' in x), 1)
        out = {}
        for place, name in _inputs_of(ep):
            line = next((n for n, x in enumerate(lines, 1) if n >= start and f'"{name}"' in x), start)
            out[(place, name.lower() if place == "headers" else name)] = Quote(rel, line)
        return out
    return {}


def _inputs_of(ep: dict) -> list[tuple[str, str]]:
    """(place, name) of an endpoint object's inputs: `request: {query: {..}, headers: {..}, body: {..}}`, or
    OpenAPI's `parameters: [{name, in}]`."""
    out = []
    request = ep.get("request")
    for key, fields in request.items() if isinstance(request, dict) else []:
        if key in _PLACES and isinstance(fields, dict):
            out += [("headers" if key == "header" else key, str(name)) for name in fields]
    for param in ep.get("parameters") if isinstance(ep.get("parameters"), list) else []:
        where = param.get("in") if isinstance(param, dict) else None
        if where in ("query", "header") and isinstance(param.get("name"), str):
            out.append(("headers" if where == "header" else "query", param["name"]))
    return out


def _traced_inputs(ctx: RunContext, call: Call) -> dict[tuple[str, str], Quote]:
    """The headers and query parameters the traced call carried, each at its trace line."""
    entry = next((e for n, e in ctx.trace if n == call.trace_line), None)
    if entry is None or call.trace_line is None:
        return {}
    at = Quote(f"{ctx.run_rel}/http-trace.ndjson", call.trace_line)
    out = {("headers", k.lower()): at for k in entry.request_headers}
    out.update({("query", k): at for k in dict(parse_qsl(urlsplit(entry.url).query))})
    return out


def _sdd_names(ctx: RunContext, unit: str) -> dict[str, Quote]:
    """The names the SDD's sections of `unit` write as code spans (`?key=` is `key`), lower-cased for headers."""
    out: dict[str, Quote] = {}
    for doc in ctx.sdd_docs:
        for span, line in code_spans(doc.text, unit, ctx.units.ids()):
            name = span.strip().lstrip("?&").split("=", 1)[0]
            if name and " " not in name:
                out.setdefault(name, Quote(doc.rel, line))
                out.setdefault(name.lower(), Quote(doc.rel, line))
    return out


def _carried(call: Call, ctx: RunContext, place: str, name: str) -> bool:
    """The traced call did send the input where the SDD says."""
    entry = next((e for n, e in ctx.trace if n == call.trace_line), None)
    if entry is None:
        return False
    if place == "headers":
        return name in {k.lower() for k in entry.request_headers}
    if place == "query":
        return name in dict(parse_qsl(urlsplit(entry.url).query))
    return isinstance(entry.request_body, dict) and name in entry.request_body


def _bare(call: Call, at: Quote) -> Operation:
    return Operation("spec", call.provider, call.provider, call.method, call.path or "/", at)


__all__ = ["SideCheck", "consumer_or_provider", "header_unread", "input_sides", "side_checks"]
