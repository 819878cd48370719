"""Which SDD clause governs a call in the failing step, and what do the contracts say about it?

The words of the case (its name, description and request values), minus the
words every clause about this endpoint shares (path, field and unit names, the
contract's own descriptions), are matched against the clauses that talk about
the endpoint. Each shared word counts 1 / (clauses using it): "expired" in one
sentence says more than "token" in six. A clause that names the endpoint
explicitly gets +0.5, except when a success was expected and the code refused
the request — then only a clause about the refused situation itself counts
(a generic "→ 200 profile" does not say that an expired token must succeed).
"""

from __future__ import annotations

from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from ..units import HttpEndpoint
from .run_context import RunContext
from .rundir import IntegrationFailure
from .sdd import Clause, path_matches
from .sdd_terms import terms

MIN_SCORE = 0.5
EXPLICIT_BONUS = 0.5
_NOISE = frozenset({"expect", "got", "receiv", "assert", "assertion", "error", "fail", "step", "case", "test", "then"})


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
    request_body: Any = None
    headers: dict[str, str] | None = None


@dataclass(frozen=True)
class Requirement:
    clause: Clause
    score: float
    term_score: float
    relevance: float
    specific: bool  # shares a word with the case that at most two clauses use

    @property
    def statuses(self) -> frozenset[int]:
        return self.clause.status_codes


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
                e.request_body,
                e.request_headers,
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
            req.body if req else None,
            req.headers if req else None,
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


def exported(ctx: RunContext, unit_id: str | None, method: str | None, path: str | None) -> HttpEndpoint | None:
    contract = ctx.contracts.get(unit_id or "")
    if contract is None or path is None:
        return None
    return next(
        (ep for ep in contract.exports.http if (method is None or ep.method == method) and path_matches(ep.path, path)),
        None,
    )


def consumed(ctx: RunContext, unit_id: str, method: str | None, path: str | None) -> HttpEndpoint | None:
    contract = ctx.contracts.get(unit_id)
    if contract is None or path is None:
        return None
    return next(
        (ep for ep in contract.consumes if (method is None or ep.method == method) and path_matches(ep.path, path)),
        None,
    )


class Matcher:
    """Scores SDD clauses against the failing case, for one call at a time."""

    def __init__(self, ctx: RunContext, failure: IntegrationFailure) -> None:
        self.ctx = ctx
        self.failure = failure
        words = f"{failure.case.replace('-', ' ')} {failure.description}"
        self.base_terms = (terms(words) | _value_terms(failure.request.body if failure.request else None)) - _NOISE
        if failure.request:
            self.base_terms |= _value_terms(dict(parse_qsl(urlsplit(failure.request.path).query)))
            self.base_terms |= _value_terms(failure.request.headers)

    def case_terms(self, call: Call) -> frozenset[str]:
        extra = _value_terms(call.request_body) | _value_terms(call.headers) if not call.failing else frozenset()
        return frozenset((self.base_terms | extra) - self.generic_terms(call))

    def generic_terms(self, call: Call) -> frozenset[str]:
        """Words every clause about this endpoint may share: they say nothing about the situation."""
        out: set[str] = set()
        for unit_id in {*self.failure.involves, call.provider or ""}:
            out |= terms(unit_id)
        ep = exported(self.ctx, call.provider, call.method, call.path)
        out |= terms((ep.path if ep else call.path) or "")
        if ep is not None:  # what the endpoint is, not the conditions its responses describe
            out |= terms(ep.description)
            for response in ep.responses.values():
                out |= terms(" ".join(_keys(response.body)))
        for body in (call.request_body, call.body):
            out |= terms(" ".join(_keys(body)))
        out |= terms(" ".join(call.headers or {}))
        return frozenset(out)

    def requirements(self, call: Call, *, bonus: bool = True) -> list[Requirement]:
        """Clauses with a status that are about this call, best first."""
        return [r for r in self.clauses(call, bonus=bonus) if r.clause.statuses]

    def clauses(self, call: Call, *, bonus: bool = True) -> list[Requirement]:
        """Every clause about this call (with or without a status), best first."""
        case_terms = self.case_terms(call)
        out = []
        for clause in self.ctx.sdd.clauses:
            relevance = clause.relevance(call.method, call.path, call.provider)
            if relevance is None:
                continue
            shared = clause.terms & case_terms
            term_score = sum(self.ctx.sdd.weight(t) for t in shared)
            specific = max((self.ctx.sdd.weight(t) for t in shared), default=0.0) >= MIN_SCORE
            score = term_score + (EXPLICIT_BONUS if bonus and relevance >= 2 else 0.0)
            out.append(Requirement(clause, score, term_score, relevance, specific))
        return sorted(out, key=lambda r: (-r.score, -r.relevance))

    def same_situation(
        self, call: Call, chosen: Requirement, reqs: list[Requirement], outcomes: tuple[int, int]
    ) -> Requirement | None:
        """A statement of `reqs` that describes the case's situation as fully as `chosen` does, with another answer.

        The case's situation is the words it shares with a statement, less the words that name an outcome (the
        status phrases of `outcomes`: "gone", "not found"), the endpoint's method, and the words every statement
        about the endpoint uses (what the endpoint is, not when it answers what). When every such word that
        `chosen` shares with the case, a rival shares too, nothing in the case makes `chosen` the more specific
        statement: the SDD gives two answers to one situation."""
        expected, got = outcomes
        rivals = [r for r in reqs if got in r.statuses and expected not in r.statuses and r.clause is not chosen.clause]
        common = frozenset.intersection(*(r.clause.terms for r in reqs)) if len(reqs) > 2 else frozenset()
        ignored = common | terms(call.method or "") | frozenset().union(*(terms(_phrase(s)) for s in outcomes))
        situation = self.case_terms(call) - ignored
        mine = chosen.clause.terms & situation
        if not mine:
            return None
        return next((r for r in rivals if mine <= r.clause.terms), None)

    def unmatched_terms(self, call: Call) -> list[str]:
        """Case words the SDD never uses ("key tokens not in the SDD")."""
        return sorted(t for t in self.case_terms(call) if not self.ctx.sdd.mentions(t) and not t.isdigit())


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def supporting(reqs: list[Requirement], status: int, *, min_score: float = MIN_SCORE) -> Requirement | None:
    return next((r for r in reqs if status in r.statuses and r.score >= min_score), None)


def contrary(reqs: list[Requirement], status: int, *, min_score: float = MIN_SCORE) -> Requirement | None:
    return next((r for r in reqs if status not in r.statuses and r.score >= min_score), None)


def explicit_success(reqs: list[Requirement]) -> Requirement | None:
    """A clause naming the endpoint whose statuses are all 2xx (what a successful call must answer)."""
    return next((r for r in reqs if r.relevance >= 2 and r.statuses and all(200 <= s < 300 for s in r.statuses)), None)


def _keys(value: Any) -> list[str]:
    if isinstance(value, dict):
        out = []
        for k, v in value.items():
            out.append(str(k))
            out.extend(_keys(v))
        return out
    if isinstance(value, list):
        return [k for v in value[:5] for k in _keys(v)]
    return []


def _value_terms(value: Any) -> frozenset[str]:
    """Words in request values (not keys): `{"quantity": 0}` → {"0"}, `Bearer expired-jwt` → {c:expire, jwt}."""
    if value is None:
        return frozenset()
    if isinstance(value, dict):
        return frozenset().union(*(_value_terms(v) for v in value.values())) if value else frozenset()
    if isinstance(value, list):
        return frozenset().union(*(_value_terms(v) for v in value[:10])) if value else frozenset()
    text = str(value)
    if isinstance(value, bool) or len(text) > 200:
        return frozenset()
    return terms(text.replace("bearer ", "").replace("Bearer ", ""))
