"""The deterministic triager: seed 001's decision flow over logs, SDD, contracts, code and history.

    1. environment signal on the failing step (EADDRINUSE, ENOSPC, EAI_AGAIN, ...)  → infra_flake
       a unit that died at start-up on its own code                                  → impl_bug
       no response at all and nothing else to go on                                   → infra_flake
    2. an upstream call of the step broke the SDD: its unit's contract disagrees     → contract_mismatch
                                                   its contract agrees               → impl_bug
    3. a consumer's contract expects a different answer than its provider gives      → contract_mismatch
    4. the failing call: the SDD does not specify the expected outcome               → spec_ambiguous
                         the SDD specifies it in two contradicting places            → spec_ambiguous
                         the provider's contract disagrees with the SDD              → contract_mismatch
                         the contract agrees, the code does not                      → impl_bug
    5. anything else                                                                 → spec_ambiguous (≤ 0.4)

Every branch writes a root cause naming the unit, the behaviour and the expected
vs actual values, cites verbatim evidence, and sets a confidence from how direct
that evidence is (`CONFIDENCE`, adjusted by `_adjust`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from typing import Any

from ..models import SddPatch, TriageCategory
from .cite import Citer
from .context import RunContext
from .matching import Call, Matcher, Requirement, consumed, contrary, explicit_success, exported, step_calls, supporting
from .rundir import IntegrationFailure, Observation
from .signals import (
    Crash,
    Signal,
    infra_signals,
    local_module_names,
    stack_frames,
    startup_crash,
    unit_of_path,
    units_in_text,
)

CONFIDENCE = {
    "infra_step": 0.92, "infra_log": 0.86, "infra_weak": 0.75, "infra_no_response": 0.6,
    "crash": 0.85, "contract_upstream": 0.85, "contract_consumer": 0.82, "contract_failing": 0.82,
    "impl_upstream": 0.8, "impl_failing": 0.76, "impl_value": 0.72,
    "spec_unspecified": 0.55, "spec_contradiction": 0.55, "spec_rounding": 0.5, "spec_value": 0.45, "spec_unknown": 0.35,
}  # fmt: skip
_INFRA_WORDS = {
    "port_in_use": "could not bind its port (EADDRINUSE: another process held it)",
    "disk_full": "ran out of disk space (ENOSPC)",
    "dns": "could not resolve a host name (EAI_AGAIN / ENOTFOUND)",
    "health_check": "never became healthy (health-check timeout)",
    "killed": "was killed by the system (SIGKILL / out of memory)",
    "timeout": "timed out on a network connection (ETIMEDOUT)",
    "missing_dependency": "could not start because a package is not installed",
    "connection_refused": "refused the connection (ECONNREFUSED: nothing was listening)",
    "connection_reset": "dropped the connection (socket hang up / ECONNRESET)",
}


@dataclass
class Finding:
    """The triager's conclusion: a seed 001 verdict plus how it was reached."""

    category: TriageCategory
    affected: list[str]
    confidence: float
    root_cause: str
    evidence: list[str]
    rule: str
    patch: SddPatch | None = None
    l3_question: str | None = None
    hints: list[str] = field(default_factory=list)


def classify(ctx: RunContext) -> Finding:
    """Triage the first failure of the run (the seed reads failures[0])."""
    failure = ctx.result.failures[0]
    t = _Triage(ctx, failure)
    finding = t.run()
    finding.evidence = list(dict.fromkeys(x for x in [*t.base_evidence, *finding.evidence] if x))
    finding.hints = [*ctx.notes, *t.hints, *finding.hints]
    if len(ctx.result.failures) > 1:
        finding.hints.append(
            f"{len(ctx.result.failures) - 1} more failure(s) in this run; the verdict is for the first ({failure.case})"
        )
    finding.confidence = round(min(max(finding.confidence, 0.05), 0.97), 2)
    return finding


class _Triage:
    def __init__(self, ctx: RunContext, failure: IntegrationFailure) -> None:
        self.ctx, self.failure = ctx, failure
        self.cite = Citer(ctx)
        self.base_evidence = self.cite.failure(failure)
        self.hints: list[str] = []
        self.matcher = Matcher(ctx, failure)

    def run(self) -> Finding:
        local = local_module_names(self.ctx)
        signals = infra_signals(self.ctx, self.failure, local)
        crash = startup_crash(self.ctx, local)
        strong = [s for s in signals if s.strong]
        if strong:
            return self.infra(strong)
        if crash is not None:
            return self.crashed(crash)
        if self.failure.got.error is not None:
            return self.infra(signals)
        calls = step_calls(self.ctx, self.failure)
        for call in calls[:-1]:
            found = self.upstream(call)
            if found:
                return found
        found = self.consumers(calls)
        if found:
            return found
        failing = calls[-1]
        if failing.path is None:
            return self.value_level(failing)
        expected, got = self.failure.expected.status, self.failure.got.status
        if expected is None or expected == got:
            return self.body_level(failing)
        return self.status_level(failing, expected, got)

    # -- 1. environment and crashes ---------------------------------------------------------

    def infra(self, signals: list[Signal]) -> Finding:
        f = self.failure
        if not signals:
            who = self._who(None)
            return Finding(
                "infra_flake",
                [],
                CONFIDENCE["infra_no_response"],
                f"{who} gave no response to {self._what()}: it received {describe(f.got)} instead of {describe(f.expected)}, with no code error in the logs; rerun before changing code",
                [],
                "infra:no_response",
            )
        top = signals[0]
        who = self._who(top)
        key = "infra_step" if top.on_failing_step and top.strong else "infra_log" if top.strong else "infra_weak"
        evidence = [self._cite_signal(s) for s in signals[:3]]
        kinds = sorted({s.kind for s in signals})
        root = f"{who} {_INFRA_WORDS[top.kind]}, so {self._what()} received {describe(f.got)} instead of {describe(f.expected)}; the environment failed, not the code — rerun"
        confidence = CONFIDENCE[key] + (0.03 if len(kinds) > 1 and top.strong else 0.0)
        return Finding(
            "infra_flake",
            [],
            confidence,
            root,
            evidence,
            f"infra:{top.kind}",
            hints=[f"environment signals: {', '.join(kinds)}"],
        )

    def crashed(self, crash: Crash) -> Finding:
        unit = crash.unit_id or self._attribute(None)
        confidence = CONFIDENCE["crash"] if crash.unit_id else CONFIDENCE["crash"] - 0.25
        evidence = [self.cite.line(crash.rel, crash.line, crash.text.strip()[:40])]
        root = f"{unit or 'a unit'} crashes at start-up on its own code ({crash.text.strip()[:120]}), so {self._what()} received {describe(self.failure.got)}; a rerun fails the same way"
        return Finding("impl_bug", [unit] if unit else [], confidence, root, evidence, "impl:startup_crash")

    # -- 2. upstream calls and 3. consumer contracts -------------------------------------------

    def upstream(self, call: Call) -> Finding | None:
        if call.status is None or call.provider is None:
            return None
        reqs = self.matcher.requirements(call)
        sup, con = supporting(reqs, call.status), contrary(reqs, call.status)
        required, req = None, None
        if con is not None and (sup is None or con.score > sup.score):
            required, req = _pick(con, call.status), con
        elif sup is None and 200 <= call.status < 300:
            success = explicit_success(reqs)
            if success is not None and call.status not in success.statuses:
                required, req = _pick(success, call.status), success
        if required is not None and req is not None:
            return self.violation(call, required, req, upstream=True)
        if sup is not None:
            missing = _missing_fields(sup.clause.fields, call.body)
            if missing:
                return self.body_violation(call, sup, missing, upstream=True)
        return None

    def consumers(self, calls: list[Call]) -> Finding | None:
        for call in calls[:-1]:
            if call.status is None or call.provider is None:
                continue
            provided = exported(self.ctx, call.provider, call.method, call.path)
            if provided is not None and call.status not in provided.responses:
                continue  # the provider broke its own contract; not the consumer's misreading
            for unit in self.failure.involves:
                wanted = consumed(self.ctx, unit, call.method, call.path) if unit != call.provider else None
                if wanted is None or not wanted.responses or call.status in wanted.responses:
                    continue
                declared = "/".join(str(s) for s in sorted(wanted.responses))
                ep = self._label(call)
                root = (
                    f"{unit} expects {declared} from {ep} but {call.provider} returns {call.status} as its contract.json "
                    f"declares, so {unit} answers {describe(self.failure.got)} instead of {describe(self.failure.expected)}"
                )
                cited, line = self.cite.contract(unit, call.method, call.path)
                provider_cited, _ = self.cite.contract(call.provider, call.method, call.path)
                evidence = [self.cite.trace(call.trace_line) if call.trace_line else None, cited, provider_cited]
                patch = SddPatch(
                    target_section=f"#unit-{unit}",
                    op="update_contract",
                    text=f"{ep} (provided by {call.provider}) answers {call.status}; {unit} must accept {call.status} (its contract.json lists only {declared}).",
                )
                return Finding(
                    "contract_mismatch",
                    [unit],
                    CONFIDENCE["contract_consumer"],
                    root,
                    evidence,
                    "contract:consumer",
                    patch=patch,
                )
        return None

    # -- 4. the failing call -----------------------------------------------------------------

    def status_level(self, call: Call, expected: int, got: int | None) -> Finding:
        refused_success = 200 <= expected < 300 and got is not None and 400 <= got < 500
        reqs = self.matcher.requirements(call, bonus=not refused_success)
        req_e = supporting(reqs, expected)
        if req_e is not None and refused_success and not req_e.specific:
            req_e = None  # a generic "→ 200" does not say that this refused situation must succeed
        if req_e is None:
            return self.unspecified(call, reqs)
        if got is not None:
            rivals = [
                r for r in reqs if got in r.statuses and expected not in r.statuses and r.clause is not req_e.clause
            ]
            req_g = max(rivals, key=lambda r: r.term_score, default=None)
            if req_g is not None and req_e.term_score >= 0.5 and req_g.term_score >= 0.75 * req_e.term_score:
                return self.contradiction(call, req_e, req_g, expected, got)
        if call.provider is None:
            call.provider = self._attribute(call)
        if call.provider is None:
            return self.unknown("no unit could be identified as serving the failing request")
        return self.violation(call, expected, req_e, upstream=False)

    def violation(self, call: Call, required: int, req: Requirement, *, upstream: bool) -> Finding:
        """`call.provider` answered `call.status` where the SDD requires `required`: its contract decides the category."""
        unit = call.provider or "?"
        ep = exported(self.ctx, unit, call.method, call.path)
        label = self._label(call)
        sdd_cite = self.cite.clause(req.clause)
        cited, line = self.cite.contract(unit, call.method, call.path)
        got = _obs_call(call)
        trace = self.cite.trace(call.trace_line) if call.trace_line else None
        prose = next((s.prose for s in req.clause.statuses if s.code == required), False)
        condition = self._condition()
        if unit in self.ctx.contracts and (ep is None or required not in ep.responses):
            declared = "/".join(str(s) for s in sorted(ep.responses)) if ep else "nothing for this endpoint"
            root = f"{unit} returns {got} for {label} in {condition}, but the SDD requires {required}; its contract.json declares {declared}, so the contract and the SDD disagree"
            patch = SddPatch(
                target_section=f"#unit-{unit}",
                op="update_contract",
                text=f'{label}: in {condition}, respond {required} as the SDD says ("{_squash(req.clause.raw)[:160]}"); {unit}\'s contract.json must declare {required}.',
            )
            key = "contract_upstream" if upstream else "contract_failing"
            evidence = [trace, sdd_cite, cited]
            return Finding(
                "contract_mismatch",
                [unit],
                _adjust(CONFIDENCE[key], prose=prose),
                root,
                evidence,
                f"contract:{'upstream' if upstream else 'failing'}",
                patch=patch,
            )
        code_note, code_cite, code_confirms = self._code_note(unit, call, required)
        root = f"{unit} returns {got} instead of {required} for {label} in {condition}, although the SDD{' and its contract.json' if ep else ''} specify {required}{code_note}"
        key = "impl_upstream" if upstream else "impl_failing"
        stack_hit = self._stack_points_to(unit)
        confidence = _adjust(CONFIDENCE[key], prose=prose, code_confirms=code_confirms, stack=stack_hit)
        if not upstream and got is not None and call.status in req.statuses:
            confidence -= 0.15  # the clause allows the answer it got too: which branch applies is inferred
        evidence = [trace, sdd_cite, cited, code_cite]
        return Finding("impl_bug", [unit], confidence, root, evidence, f"impl:{'upstream' if upstream else 'failing'}")

    def body_violation(self, call: Call, req: Requirement, missing: list[str], *, upstream: bool) -> Finding:
        unit = call.provider or "?"
        ep = exported(self.ctx, unit, call.method, call.path)
        label = self._label(call)
        declared = ep.responses.get(call.status) if ep and call.status is not None else None
        declared_keys = set(_top_keys(declared.body)) if declared else set()
        cited, line = self.cite.contract(unit, call.method, call.path)
        evidence = [self.cite.trace(call.trace_line) if call.trace_line else None, self.cite.clause(req.clause), cited]
        fields = ", ".join(missing)
        if unit in self.ctx.contracts and declared is not None and declared_keys and not set(missing) <= declared_keys:
            root = f"{unit} returns {call.status} from {label} without {fields}: the SDD's body has {fields} but {unit}'s contract.json declares {', '.join(sorted(declared_keys))}, so the contract and the SDD disagree"
            patch = SddPatch(
                target_section=f"#unit-{unit}",
                op="update_contract",
                text=f"{label} {call.status} body: {{{', '.join(req.clause.fields)}}}; {unit}'s contract.json must use the same fields.",
            )
            return Finding(
                "contract_mismatch",
                [unit],
                CONFIDENCE["contract_upstream" if upstream else "contract_failing"] - 0.03,
                root,
                evidence,
                "contract:body",
                patch=patch,
            )
        root = f"{unit} returns {call.status} from {label} without {fields}, which the SDD and its contract.json put in the body"
        return Finding(
            "impl_bug",
            [unit],
            CONFIDENCE["impl_upstream" if upstream else "impl_failing"] - 0.03,
            root,
            evidence,
            "impl:body",
        )

    def body_level(self, call: Call) -> Finding:
        expected, got = self.failure.expected, self.failure.got
        mismatched = _mismatches(expected.body if expected.body is not None else expected.value, call.body)
        if not mismatched:
            return self.unknown("the response matches what the case expected as far as the triager can compare")
        if _rounding_like(mismatched) and not self._sdd_says("round"):
            return self.spec(
                "spec_rounding",
                f"The SDD does not say how {', '.join(mismatched)} of {self._label(call)} is rounded: the case expects {_vals(mismatched, 0)}, {call.provider or 'the unit'} returns {_vals(mismatched, 1)}",
                "How should the value be rounded (half up, half to even, truncated)?",
                call,
            )
        reqs = self.matcher.requirements(call)
        req = supporting(reqs, got.status) if got.status is not None else None
        missing = [k for k in mismatched if isinstance(call.body, dict) and k not in call.body]
        if req is not None and set(missing) & set(req.clause.fields):
            call.provider = call.provider or self._attribute(call)
            return self.body_violation(call, req, [k for k in missing if k in req.clause.fields], upstream=False)
        literal = [
            k
            for k, (want, _have) in mismatched.items()
            if any(str(want) in r.clause.raw for r in self.matcher.clauses(call) if r.score >= 0.5)
        ]
        if literal and (call.provider or self._attribute(call)):
            unit = call.provider or self._attribute(call)
            clause = next(
                r.clause for r in self.matcher.clauses(call) if str(mismatched[literal[0]][0]) in r.clause.raw
            )
            root = f"{unit} returns {literal[0]}={_vals(mismatched, 1, literal[0])} from {self._label(call)} but the SDD states {_vals(mismatched, 0, literal[0])}"
            return Finding("impl_bug", [unit], CONFIDENCE["impl_value"], root, [self.cite.clause(clause)], "impl:value")
        return self.spec(
            "spec_value",
            f"The SDD does not state the value of {', '.join(mismatched)} that {self._label(call)} should return in {self._condition()}: the case expects {_vals(mismatched, 0)}, the code returns {_vals(mismatched, 1)}",
            f"What should {', '.join(mismatched)} be in {self._condition()}?",
            call,
        )

    def value_level(self, call: Call) -> Finding:
        """A non-HTTP step (a function-level integration case, e.g. the snake game)."""
        expected, got = self.failure.expected, self.failure.got
        mismatched = _mismatches(
            expected.value if expected.value is not None else expected.body,
            got.value if got.value is not None else got.body,
        )
        names = frozenset(mismatched)
        case_terms = self.matcher.case_terms(call)
        unmatched = self.matcher.unmatched_terms(call)
        coverage = 1 - len(unmatched) / max(len(case_terms), 1)
        if mismatched and _rounding_like(mismatched) and not self._sdd_says("round"):
            return self.spec(
                "spec_rounding",
                f"The SDD does not say how {', '.join(mismatched)} is rounded: the case expects {_vals(mismatched, 0)}, the code returns {_vals(mismatched, 1)}",
                "How should the value be rounded?",
                call,
            )
        if len(unmatched) >= 2 and coverage < 0.75:
            near = max(
                (
                    r
                    for u in self.failure.involves
                    for r in self.matcher.clauses(replace(call, provider=u))
                    if r.term_score > 0
                ),
                key=lambda r: r.term_score,
                default=None,
            )
            finding = self.spec(
                "spec_unspecified",
                f"The SDD does not describe what happens in {self._condition()} (it never mentions: {', '.join(unmatched[:5])}); the case expects {_vals(mismatched, 0)}, the code returns {_vals(mismatched, 1)}",
                f"What should happen in {self._condition()}?",
                call,
            )
            finding.evidence += [self.cite.clause(near.clause)] if near else []
            return finding
        unit, code_cite = self._owner_of(names)
        if unit is None:
            return self.unknown("no involved unit's code mentions the fields that differ")
        clauses = [
            r for r in self.matcher.clauses(replace(call, provider=unit)) if unit in r.clause.units and r.term_score > 0
        ]
        evidence = [self.cite.clause(clauses[0].clause) if clauses else None, code_cite]
        root = f"{unit} returns {_vals(mismatched, 1)} instead of {_vals(mismatched, 0)} in {self._condition()}, which the SDD describes for {unit}"
        return Finding(
            "impl_bug", [unit], CONFIDENCE["impl_value"] - (0.1 if not clauses else 0.0), root, evidence, "impl:value"
        )

    # -- spec_ambiguous branches -------------------------------------------------------------

    def unspecified(self, call: Call, reqs: list[Requirement]) -> Finding:
        f = self.failure
        label = self._label(call)
        near = [r for r in self.matcher.clauses(call) if r.relevance >= 1][:1]
        root = f"The SDD does not say what {label} returns in {self._condition()}: the case expects {describe(f.expected)}, {call.provider or 'the unit'} returns {describe(f.got)}"
        finding = self.spec(
            "spec_unspecified",
            root,
            f"What should {label} return in {self._condition()}: {describe(f.expected)} (as the case expects) or {describe(f.got)} (what the code does)?",
            call,
        )
        finding.evidence += [self.cite.clause(r.clause) for r in near]
        unmatched = self.matcher.unmatched_terms(call)
        if unmatched:
            finding.hints.append(f"case words the SDD never uses: {', '.join(unmatched[:8])}")
        return finding

    def contradiction(self, call: Call, req_e: Requirement, req_g: Requirement, expected: int, got: int) -> Finding:
        label = self._label(call)
        a, b = req_e.clause, req_g.clause
        root = f"The SDD contradicts itself for {label} in {self._condition()}: {a.doc}:{a.line} says {expected}, {b.doc}:{b.line} says {got}; the code returns {got}, the case expects {expected}"
        finding = self.spec(
            "spec_contradiction",
            root,
            f'Which rule wins for {label} in {self._condition()}: "{_squash(a.raw)[:100]}" ({expected}) or "{_squash(b.raw)[:100]}" ({got})?',
            call,
        )
        finding.evidence += [self.cite.clause(a), self.cite.clause(b)]
        return finding

    def unknown(self, why: str) -> Finding:
        f = self.failure
        root = f"{self._what()} received {describe(f.got)} instead of {describe(f.expected)} and the triager cannot place the fault: {why}"
        return Finding(
            "spec_ambiguous",
            [],
            CONFIDENCE["spec_unknown"],
            root,
            [],
            "spec:unknown",
            l3_question=f"Which unit should change so that {self._what()} gets {describe(f.expected)}?",
        )

    def spec(self, key: str, root: str, question: str, call: Call) -> Finding:
        evidence = [self.cite.trace(call.trace_line)] if call.trace_line else []
        return Finding(
            "spec_ambiguous", [], CONFIDENCE[key], root, evidence, key.replace("_", ":", 1), l3_question=question
        )

    # -- helpers -----------------------------------------------------------------------------

    def _condition(self) -> str:
        """The situation, in the case's words: `case x step 1 ("an expired token is rejected")`."""
        said = " ".join(self.failure.description.split()).rstrip(".")
        return f'{self._what()} ("{said}")' if said else self._what()

    def _label(self, call: Call) -> str:
        """`GET /orders/{order_id}`: the endpoint as its contract (else the request) names it, no query string."""
        ep = exported(self.ctx, call.provider, call.method, call.path)
        return f"{call.method} {ep.path if ep else (call.path or '').split('?', 1)[0]}"

    def _what(self) -> str:
        return f"case {self.failure.case} step {self.failure.step}"

    def _who(self, signal: Signal | None) -> str:
        if signal is not None:
            if signal.unit_id:
                return signal.unit_id
            mentioned = [u for u in self.ctx.units.ids() if u in signal.text]
            if mentioned:
                return mentioned[0]
        req = self.failure.request
        provider = step_calls(self.ctx, self.failure)[-1].provider if req else None
        return provider or "the integration environment"

    def _attribute(self, call: Call | None) -> str | None:
        """Which unit to blame when the trace does not say: the stack, else the only involved unit."""
        units = units_in_text(self.ctx, self.failure.stack) or units_in_text(
            self.ctx, "\n".join(x.text for x in self.ctx.log)
        )
        if units:
            return units[0]
        return self.failure.involves[0] if len(self.failure.involves) == 1 else None

    def _stack_points_to(self, unit: str) -> bool:
        return unit in units_in_text(
            self.ctx, f"{self.failure.stack}\n{self.failure.got.body if isinstance(self.failure.got.body, str) else ''}"
        )

    def _code_note(self, unit: str, call: Call, required: int) -> tuple[str, str | None, bool]:
        route = self.ctx.code_diff(unit).route(call.method, call.path or "")
        frames = [unit_of_path(self.ctx, p) for p, _ in stack_frames(self.failure.stack)]
        if route is None:
            return "", None, False
        if not route.produces(required):
            return (
                f"; its handler ({route.file}:{route.line}) never returns {required}",
                self.cite.code(route.file, route.line),
                True,
            )
        if route.throws_at:
            return (
                f"; its handler throws at {route.file}:{route.throws_at} before answering",
                self.cite.code(route.file, route.throws_at),
                True,
            )
        hit = next((h for h in frames if h and h[0] == unit), None)
        return (
            (f"; the stack points into {hit[1]}", None, True)
            if hit
            else ("", self.cite.code(route.file, route.line), False)
        )

    def _owner_of(self, fields: frozenset[str]) -> tuple[str | None, str | None]:
        for unit in self.failure.involves:
            for src in self.ctx.code.get(unit, []):
                for i, line in enumerate(src.lines, 1):
                    if any(re.search(rf"\b{re.escape(name)}\b", line) for name in fields):
                        return unit, self.cite.code(src.rel, i)
        units = units_in_text(self.ctx, self.failure.stack)
        return (units[0], None) if units else (None, None)

    def _sdd_says(self, word: str) -> bool:
        return any(t.startswith(word) for t in self.ctx.sdd.df)

    def _cite_signal(self, signal: Signal) -> str | None:
        if signal.line is not None:
            return self.cite.line(signal.rel, signal.line, signal.text.strip()[:30] or None)
        at = self.cite.find(signal.rel, signal.text.split("\n")[0][:60])
        return self.cite.line(signal.rel, at, signal.text.split("\n")[0][:30]) if at else None


# -- small pure helpers ------------------------------------------------------------------------


def _adjust(base: float, *, prose: bool = False, code_confirms: bool = False, stack: bool = False) -> float:
    return base - (0.08 if prose else 0.0) + (0.07 if code_confirms else 0.0) + (0.03 if stack else 0.0)


def _pick(req: Requirement, observed: int) -> int:
    return next(s.code for s in req.clause.statuses if s.code != observed)


def describe(o: Observation) -> str:
    """An observation in words: `401`, `no response (connect ECONNREFUSED ...)`, `value {...}`."""
    if o.error:
        return f"no response ({o.error.strip()[:80]})"
    if o.status is not None:
        return str(o.status)
    if o.value is not None:
        return f"value {_short(o.value)}"
    return f"body {_short(o.body)}" if o.body is not None else "nothing"


def _obs_call(call: Call) -> str:
    return str(call.status) if call.status is not None else f"no response ({call.error})"


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def _top_keys(value: Any) -> list[str]:
    return [str(k) for k in value] if isinstance(value, dict) else []


def _missing_fields(fields: tuple[str, ...], body: Any) -> list[str]:
    if not fields or not isinstance(body, dict) or not body:
        return []
    missing = [f for f in fields if f not in body]
    return missing if missing and len(missing) < len(fields) else []


def _mismatches(want: Any, have: Any) -> dict[str, tuple[Any, Any]]:
    """Top-level fields whose expected value differs (or is missing); a scalar is the field `value`."""
    if isinstance(want, dict):
        have = have if isinstance(have, dict) else {}
        return {k: (v, have.get(k)) for k, v in want.items() if k not in have or have[k] != v}
    return {} if want is None or want == have else {"value": (want, have)}


def _rounding_like(mismatched: dict[str, tuple[Any, Any]]) -> bool:
    """Every difference is one unit on a number of at least 10 (82 vs 83 cents), or under 0.5 % for floats."""
    pairs = list(mismatched.values())
    if not pairs:
        return False
    for want, have in pairs:
        if not (isinstance(want, int | float) and isinstance(have, int | float)) or isinstance(want, bool):
            return False
        diff = abs(want - have)
        if not (0 < diff <= 1 and abs(want) >= 10) and not (0 < diff <= 0.005 * abs(want)):
            return False
    return True


def _vals(mismatched: dict[str, tuple[Any, Any]], index: int, only: str | None = None) -> str:
    items = [(k, v[index]) for k, v in mismatched.items() if only is None or k == only]
    if len(items) == 1 and items[0][0] == "value":
        return _short(items[0][1])
    return ", ".join(f"{k}={_short(v)}" for k, v in items)


def _squash(text: str) -> str:
    return " ".join(text.split())
