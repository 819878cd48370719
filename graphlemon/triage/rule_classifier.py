"""The deterministic triager: the decision flow (docs/triage.md, "How the deterministic triager decides") over logs, SDD, contracts, code and history.

    1. environment signal on the failing step (EADDRINUSE, ENOSPC, EAI_AGAIN, ...)  → infra_flake
       a unit that died at start-up on its own code (the refusals that follow
       are its consequence)                                                          → impl_bug
       no response, and the serving unit's own code panicked while serving it        → impl_bug (uncaught)
                     or the unit answered the calls traced around it (a timeout)     → impl_bug (0.7)
       no response at all and nothing else to go on                                   → infra_flake
       ... unless the run contradicts every signal (healthy.py: a time-out while every call of the step was
       answered; a kill ending the unit's own loop of identical requests), or the error reports answers the
       step got (every traced call answered, and no request of its own or an answer to it): the flow goes on
   1b. the interface model compared by structure (interface_diff.py): SDD vs contracts vs code vs trace;
       the category follows from which sides agree                                   → the finding's
       beyond HTTP: a message subject (messages.py), a field's null stance (nullability.py), its unit or
       date format (measures.py), the side departing from the SDD                    → contract_mismatch
       a request field the SDD's table marks optional, refused when left out (required.py)
                                                          → contract_mismatch / impl_bug, the provider
       a request input (header, query parameter) one side puts where the other does not read it, judged by
       the SDD's code spans (the contracts, or the code's header reads)              → input_differs
       a consumer and its provider disagree on a status: the one that departs from the SDD's statement
                                                                                      → contract_mismatch
       a declared fact (a field's unit, enumeration and case, range, field number, key layout, column order)
       two sides contradict (facts_diff.py): the SDD backs one side → contract_mismatch for the other; it
       states neither or both                                                         → spec_ambiguous
       the failing request differs from a successful one only by an input the SDD
       never mentions                                                                 → spec_ambiguous (0.5)
   1c. a call answered a boolean field the SDD defines by a threshold on another field of the answer, and
       the answer's own values contradict it (derived.py)                             → impl_bug (0.76)
    2. an upstream call of the step broke the SDD: its unit's contract disagrees     → contract_mismatch
                                                   its contract agrees               → impl_bug
    3. a consumer's contract expects a different answer than its provider gives, and no SDD statement
       shows which contract departs from it (1b found none)                           → the consumer, < 0.8
    4. the failing call: the SDD does not specify the expected outcome               → spec_ambiguous
                         ... but SDD and contract state it and the handler never
                         produces it                                                 → impl_bug (0.7)
                         the SDD specifies it in two contradicting places (another
                         statement fits the case's situation as well)                → spec_ambiguous
                         the provider's contract disagrees with the SDD              → contract_mismatch
                         the contract agrees, the code does not                      → impl_bug
       a function-level step (a library's pytest case, no HTTP) is read call by call first:
       a call that does not fit its function (signature / type)  → fitfindings.py
       an observed call value that contradicts the SDD           → callfindings.py
    5. anything else                                                                 → spec_ambiguous (≤ 0.4)
    then a verdict "the SDD does not say" (or an impl_bug whose unit shared words picked) is asked once more
       (decides.py): an SDD statement holds the case's values and none only the run got → impl_bug (0.7),
       the unit of its section; another holds them with the run's value                 → spec_ambiguous

Every branch writes a root cause naming the unit, the behaviour and the expected
vs actual values, cites verbatim evidence, and sets a confidence from how direct
that evidence is (`CONFIDENCE`, adjusted by `_adjust`).
"""

from __future__ import annotations

from dataclasses import replace

from ..models import SddPatch
from .backing import backing_service_signals, external_service_signals
from .boundary import INCLUSIVE, Boundary, boundary_item
from .callfindings import CallFindings
from .decides import sdd_decides
from .derived import DerivedField, contradicted
from .facts_diff import value_contradiction, value_verdict
from .findings import CONFIDENCE, Finding
from .healthy import Healthy, answered_report, run_contradicts
from .interface_diff import DistinguishingInput, compare, distinguishing_input, input_unspecified, unproduced
from .interface_sdd import states_a_bound
from .interface_sidecheck import consumer_or_provider, header_unread, input_sides, side_checks
from .interface_sides import Interfaces
from .interface_verdict import UNJUDGED, cap_for_missed_input, cap_word_verdict, interface_verdict
from .matching import Call, consumed, contrary, explicit_success, exported, step_calls, supporting
from .measures import measure_findings
from .messages import subject_findings
from .nullability import nullable_findings
from .oserrors import PATTERNS
from .required import required_findings
from .run_context import RunContext
from .signals import infra_signals, local_module_names, startup_crash
from .uncaught import Hung, Uncaught, hung_request, refused_became_error, uncaught_in_provider
from .verdict_helpers import describe, mismatches, missing_fields, pick_status, rounding_like, values_text

# what a unit that never started looks like to its callers: the crash explains them
_CRASH_CONSEQUENCES = frozenset({"connection_refused", "connection_reset", "backing_service", "health_check"})


def classify(ctx: RunContext) -> Finding:
    """Triage the first failure of the run (failures[0]; the others usually follow from it)."""
    failure = ctx.result.failures[0]
    t = _Triage(ctx, failure)
    finding = sdd_decides(ctx, failure, t.cite, t.run())  # "the SDD does not say": does a statement decide the case?
    finding = cap_for_missed_input(cap_word_verdict(finding), t.distinguishing)
    finding.evidence = list(dict.fromkeys(x for x in [*t.base_evidence, *finding.evidence] if x))
    if t.healthy is not None:
        finding.hints.append(f"environment signals set aside: {t.healthy.reason}")
    finding.hints = [*ctx.notes, *t.hints, *finding.hints, *t.history_hints(finding.affected or failure.involves)]
    if len(ctx.result.failures) > 1:
        finding.hints.append(
            f"{len(ctx.result.failures) - 1} more failure(s) in this run; the verdict is for the first ({failure.case})"
        )
    finding.confidence = round(min(max(finding.confidence, 0.05), 0.97), 2)
    return finding


class _Triage(CallFindings):
    """The decision flow; the verdicts themselves are built by `FindingBuilder` and `CallFindings`."""

    distinguishing: DistinguishingInput | None = None  # what set the failing request apart, once looked for
    healthy: Healthy | None = None  # why the run contradicts its environment signals (healthy.py)

    def run(self) -> Finding:
        local = local_module_names(self.ctx)
        signals = infra_signals(self.ctx, self.failure, local)
        crash = startup_crash(self.ctx, local)
        strong = [s for s in signals if s.strong]
        backing = backing_service_signals(self.ctx, self.failure) + external_service_signals(self.ctx, self.failure)
        if crash is not None and all(s.kind in _CRASH_CONSEQUENCES for s in [*strong, *backing]):
            return self.crashed(crash)
        self.healthy = run_contradicts(self.ctx, self.failure, [*strong, *backing])
        if (strong or backing) and self.healthy is None:
            return self.infra([*strong, *backing])
        calls = step_calls(self.ctx, self.failure)
        reported = answered_report(self.ctx, self.failure)  # the error reports answers the step got
        if self.failure.got.error is not None and self.healthy is None and not reported:
            # no answer came: the serving unit's own code raised on this request (a panic, an uncaught exception),
            # or it answered the requests around this one and never this one — else the environment
            refused = PATTERNS["connection_refused"].search(self.failure.got.error)  # nothing was listening
            raised = None if refused else uncaught_in_provider(self.ctx, self.failure, calls)
            if raised is not None:
                return self.uncaught(raised)
            hung = hung_request(self.ctx, self.failure)
            return self.hung(hung) if hung is not None else self.infra(signals)
        found = self.structure(calls)
        if found:
            return found
        derived = contradicted(self.ctx, calls)
        if derived is not None:
            return self.derived(derived)
        for call in calls[:-1]:
            found = self.upstream(call)
            if found:
                return found
        found = self.consumers(calls)
        if found:
            return found
        if refused_became_error(self.failure):
            raised = uncaught_in_provider(self.ctx, self.failure, calls)
            if raised is not None:
                return self.uncaught(raised)
        failing = calls[-1]
        if failing.path is None:
            return self.value_level(failing)
        expected, got = self.failure.expected.status, self.failure.got.status
        if expected is None or expected == got:
            return self.body_level(failing)
        return self.status_level(failing, expected, got)

    def structure(self, calls: list[Call]) -> Finding | None:
        """The first typed disagreement between the sides of the interface; else an input the SDD never mentions."""
        findings = (
            compare(self.ctx, self.failure, calls)
            or subject_findings(self.ctx, self.failure)
            or nullable_findings(self.ctx, self.failure, calls)
            or measure_findings(self.ctx, self.failure, calls)
            or required_findings(self.ctx, self.failure)
            or input_sides(self.ctx, self.failure, calls)
            or header_unread(self.ctx, self.failure, calls)
            or [c.finding for c in side_checks(self.ctx, self.failure, calls) if c.finding is not None]
        )
        if findings:
            finding = interface_verdict(findings[0], self.failure, self.cite)
            notes = [self._coder_note(u, c) for u in finding.affected for c in calls if c.provider == u]
            finding.evidence += [n for n in notes if n][:1]  # the coder's own words on why the unit does so
            return finding
        contradiction = value_contradiction(self.ctx, self.failure, calls)
        if contradiction is not None:
            return value_verdict(contradiction, self.failure, self.cite)
        self.distinguishing = distinguishing_input(self.ctx, self.failure, calls[-1])
        if self.distinguishing is not None:
            silent = input_unspecified(self.ctx, self.failure, calls[-1], self.distinguishing)
            if silent is not None:
                return interface_verdict(silent, self.failure, self.cite)
        return None

    def uncaught(self, raised: Uncaught) -> Finding:
        """A refusal the case required became a 5xx (or no answer) because the serving unit's own code raised."""
        f = self.failure
        trace = self.cite.line(raised.where, raised.where_line, raised.text[:40]) if raised.where_line else None
        wanted = describe(f.expected)
        wanted = f"the request to be refused with {wanted}" if refused_became_error(f) else wanted
        root = (
            f"{raised.unit_id} raises an uncaught exception in its own code ({raised.file}:{raised.line}) for "
            f"{self._what()}, so it answers {describe(f.got)} where the case requires {wanted}"
        )
        evidence = [trace, self.cite.code(raised.file, raised.line)]
        return Finding("impl_bug", [raised.unit_id], CONFIDENCE["impl_uncaught"], root, evidence, "impl:uncaught")

    def derived(self, found: DerivedField) -> Finding:
        """A call answered a boolean field that contradicts the SDD's definition of it by another field."""
        unit, call, f = found.call.provider or "?", found.call, self.failure
        have = str(call.body[found.flag]).lower()  # type: ignore[index]
        root = (
            f"{unit} answered {found.flag} = {have} with {found.basis} = {found.basis_value:g} for {self._label(call)}, "
            f"where the SDD defines {found.flag} by {found.basis} ({found.clause.doc}:{found.clause.line}), which gives "
            f"{str(found.stated).lower()}; so {self._what()} received {describe(f.got)} instead of {describe(f.expected)}"
        )
        trace = f"{self.ctx.run_rel}/http-trace.ndjson"  # the answer's values, not only its status
        shown = self.cite.line(trace, call.trace_line, f'"{found.basis}"') if call.trace_line else None
        evidence = [self.cite.clause(found.clause), shown]
        return Finding("impl_bug", [unit], CONFIDENCE["impl_derived"], root, evidence, "impl:derived")

    def hung(self, hung: Hung) -> Finding:
        """The serving unit answered the calls around this one, and never this one: its handler did not respond."""
        root = (
            f"{hung.unit_id} answered the calls traced before and after this one, but never answered {self._what()} "
            f"(the client gave up: {hung.error[:120]}); the unit was up and reachable, so its handling of this "
            f"request does not send an answer"
        )
        evidence = [self.cite.trace(hung.line), self.cite.trace(hung.after)]
        return Finding("impl_bug", [hung.unit_id], CONFIDENCE["impl_hung"], root, evidence, "impl:hung")

    def upstream(self, call: Call) -> Finding | None:
        if call.status is None or call.provider is None:
            return None
        reqs = self.matcher.requirements(call)
        sup, con = supporting(reqs, call.status), contrary(reqs, call.status)
        required, req = None, None
        if con is not None and (sup is None or con.score > sup.score):
            required, req = pick_status(con, call.status), con
        elif sup is None and 200 <= call.status < 300:
            success = explicit_success(reqs)
            if success is not None and call.status not in success.statuses:
                required, req = pick_status(success, call.status), success
        if required is not None and req is not None:
            return self.violation(call, required, req, upstream=True)
        if sup is not None:
            missing = missing_fields(sup.clause.fields, call.body)
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
                doubt = self._doubt(call, unit)  # a side the SDD shows departing was found by `structure`
                declared = "/".join(str(s) for s in sorted(wanted.responses))
                ep = self._label(call)
                as_declared = "as its contract.json declares" if provided else "(its contract.json does not state it)"
                root = (
                    f"{unit} expects {declared} from {ep} but {call.provider} returns {call.status} {as_declared}, "
                    f"so {unit} answers {describe(self.failure.got)} instead of {describe(self.failure.expected)}"
                )
                cited, _ = self.cite.contract(unit, call.method, call.path)
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
                    min(CONFIDENCE["contract_consumer"], UNJUDGED),
                    root,
                    evidence,
                    "contract:consumer",
                    patch=patch,
                    hints=[f"confidence capped at {UNJUDGED}: {doubt}"],
                )
        return None

    def _doubt(self, call: Call, unit: str) -> str:
        """Why the SDD's statement of the endpoint shows neither contract departing (interface_sidecheck.py)."""
        consumer = next(
            (op for op in Interfaces(self.ctx).of("consumer", call.provider, call.method, call.path or "/") if op.unit == unit),
            None,
        )
        checked = consumer_or_provider(self.ctx, call, consumer) if consumer is not None else None
        return (checked.doubt if checked else None) or "no SDD statement shows which contract departs from it"

    def status_level(self, call: Call, expected: int, got: int | None) -> Finding:
        refused_success = 200 <= expected < 300 and got is not None and 400 <= got < 500
        reqs = self.matcher.requirements(call, bonus=not refused_success)
        req_e = supporting(reqs, expected)
        if req_e is not None and refused_success and not req_e.specific:
            req_e = None  # a generic "→ 200" does not say that this refused situation must succeed
        if req_e is None:
            never = unproduced(self.ctx, self.failure, call)  # the handler cannot give that answer at all
            return interface_verdict(never, self.failure, self.cite) if never else self.unspecified(call)
        beyond_limit = (
            400 <= expected < 500 and got is not None and 200 <= got < 300 and states_a_bound(req_e.clause.raw)
        )
        if got is not None:
            rivals = [
                r for r in reqs if got in r.statuses and expected not in r.statuses and r.clause is not req_e.clause
            ]
            if beyond_limit:  # a limit refines the success statement: the two are not rivals
                rivals = [r for r in rivals if not all(200 <= x < 300 for x in r.statuses)]
            req_g = max(rivals, key=lambda r: r.term_score, default=None)
            if req_g is not None and req_e.term_score >= 0.5 and req_g.term_score >= 0.75 * req_e.term_score:
                return self.contradiction(call, req_e, req_g, expected, got)
            same = self.matcher.same_situation(call, req_e, reqs, (expected, got))
            if same is not None and not (beyond_limit and all(200 <= x < 300 for x in same.statuses)):
                return self.contradiction(call, req_e, same, expected, got)
        if call.provider is None:
            call.provider = self._attribute(call)
        if call.provider is None:
            return self.unknown("no unit could be identified as serving the failing request")
        return self.violation(call, expected, req_e, upstream=False)

    def body_level(self, call: Call) -> Finding:
        expected, got = self.failure.expected, self.failure.got
        mismatched = mismatches(expected.body if expected.body is not None else expected.value, call.body)
        if not mismatched:
            return self.unknown("the response matches what the case expected as far as the triager can compare")
        bound = boundary_item(self.failure, call)
        if bound is not None:
            return self.on_bound(call, bound)
        if rounding_like(mismatched) and not self._sdd_says("round"):
            return self.spec(
                "spec_rounding",
                f"The SDD does not say how {', '.join(mismatched)} of {self._label(call)} is rounded: the case expects {values_text(mismatched, 0)}, {call.provider or 'the unit'} returns {values_text(mismatched, 1)}",
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
            root = f"{unit} returns {values_text(mismatched, 1, literal[0])} from {self._label(call)} but the SDD states {values_text(mismatched, 0, literal[0])}"
            return Finding("impl_bug", [unit], CONFIDENCE["impl_value"], root, [self.cite.clause(clause)], "impl:value")
        return self.spec(
            "spec_value",
            f"The SDD does not state the value of {', '.join(mismatched)} that {self._label(call)} should return in {self._condition()}: the case expects {values_text(mismatched, 0)}, the code returns {values_text(mismatched, 1)}",
            f"What should {', '.join(mismatched)} be in {self._condition()}?",
            call,
        )

    def on_bound(self, call: Call, bound: Boundary) -> Finding:
        """The answer lacks the one item that lies on a bound of the request: included, if the SDD or the
        provider's contract says the endpoint's bounds are; else a person decides (boundary.py)."""
        unit = call.provider or self._attribute(call)
        label = self._label(call)
        stated = [self.cite.clause(r.clause) for r in self.matcher.clauses(call) if INCLUSIVE.search(r.clause.raw)]
        if unit is not None:
            rel = self.ctx.contract_rel(unit)
            stated += [self.cite.line(rel, n) for n, x in enumerate(self.cite.lines(rel), 1) if INCLUSIVE.search(x)]
        stated = [x for x in stated if x]
        trace = self.cite.trace(call.trace_line) if call.trace_line else None
        if stated and unit is not None:
            where = stated[0].split(": ", 1)[0]
            root = (
                f"{unit} leaves out {bound.describe()} from {label}, although the endpoint's bounds are included "
                f"({where}), so {self._what()} received {len(call.body.get(bound.field) or [])} {bound.field} "  # type: ignore[union-attr]
                f"instead of {len(self.failure.expected.body[bound.field])}"  # type: ignore[index]
            )
            return Finding("impl_bug", [unit], CONFIDENCE["impl_bound"], root, [*stated[:2], trace], "impl:bound")
        return self.spec(
            "spec_bound",
            f"{label} answers without {bound.describe()}, and neither the SDD nor the contract says whether the "
            f"request's bounds are included; the case expects the item, the code leaves it out",
            f"Does {label} include an item whose {bound.key} equals the request's {bound.input} ({bound.value})?",
            call,
        )

    def value_level(self, call: Call) -> Finding:
        """A non-HTTP step (a function-level integration case: a library's pytest test, the snake game)."""
        found = self.call_level()
        if found is not None:
            return found
        expected, got = self.failure.expected, self.failure.got
        want = expected.value if expected.value is not None else expected.body
        mismatched = mismatches(want, got.value if got.value is not None else got.body)
        names = frozenset(mismatched) if isinstance(want, dict) else frozenset()  # a scalar's "value" is no field
        case_terms = self.matcher.case_terms(call)
        unmatched = self.matcher.unmatched_terms(call)
        coverage = 1 - len(unmatched) / max(len(case_terms), 1)
        if mismatched and rounding_like(mismatched) and not self._sdd_says("round"):
            return self.spec(
                "spec_rounding",
                f"The SDD does not say how {', '.join(mismatched)} is rounded: the case expects {values_text(mismatched, 0)}, the code returns {values_text(mismatched, 1)}",
                "How should the value be rounded?",
                call,
            )
        found = self.call_unspecified()
        if found is not None:
            return found
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
                f"The SDD does not describe what happens in {self._condition()} (it never mentions: {', '.join(unmatched[:5])}); the case expects {values_text(mismatched, 0)}, the code returns {values_text(mismatched, 1)}",
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
        root = f"{unit} returns {values_text(mismatched, 1)} instead of {values_text(mismatched, 0)} in {self._condition()}, which the SDD describes for {unit}"
        return Finding(
            "impl_bug", [unit], CONFIDENCE["impl_value"] - (0.1 if not clauses else 0.0), root, evidence, "impl:value"
        )
