"""The triager's findings: one builder per kind of verdict, each with its root-cause sentence, evidence and confidence.

A root cause names the unit, the behaviour (a verb: returns, crashes, refused, ...) and the
expected vs actual values; evidence is cited verbatim (`Citer`); confidence starts from
`CONFIDENCE` (how direct the branch's evidence is) and is moved by `adjust`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..models import SddPatch, TriageCategory
from .cite import Citer
from .history import failure_signature, find_similar_bug
from .matching import Call, Matcher, Requirement, exported, step_calls
from .run_context import RunContext
from .rundir import IntegrationFailure
from .signals import Crash, Signal, stack_frames, unit_of_path, units_in_text
from .verdict_helpers import adjust, describe, describe_call, squash, top_keys

CONFIDENCE = {
    "infra_step": 0.92, "infra_log": 0.86, "infra_weak": 0.75, "infra_no_response": 0.6, "impl_hung": 0.7, "impl_bound": 0.76, "impl_derived": 0.76, "spec_bound": 0.5,
    "crash": 0.85, "contract_upstream": 0.85, "contract_consumer": 0.82, "contract_failing": 0.82,
    "impl_upstream": 0.8, "impl_failing": 0.76, "impl_uncaught": 0.84, "impl_value": 0.72,
    "spec_unspecified": 0.55, "spec_contradiction": 0.55, "spec_rounding": 0.5, "spec_value": 0.45, "spec_unknown": 0.35,
    # function-level (library) failures read call by call (callfindings.py, fitfindings.py)
    "contract_call": 0.8, "contract_signature": 0.8, "contract_types": 0.8, "contract_types_consumer": 0.6,
    "impl_call": 0.8, "impl_call_formula": 0.8, "impl_signature": 0.78, "spec_call": 0.55, "spec_case_vs_sdd": 0.5,
}  # fmt: skip
_INFRA_WORDS = {
    "port_in_use": "could not bind its port (EADDRINUSE: another process held it)",
    "disk_full": "ran out of disk space (ENOSPC)",
    "dns": "could not resolve a host name (EAI_AGAIN / ENOTFOUND)",
    "health_check": "never became healthy (health-check timeout)",
    "killed": "was killed by the system (SIGKILL / out of memory)",
    "timeout": "timed out on a network connection (ETIMEDOUT)",
    "missing_dependency": "could not start because a package is not installed",
    "unreachable": "could not reach the network or host (ENETUNREACH / EHOSTUNREACH)",
    "out_of_resources": "ran out of memory or file handles (ENOMEM / EMFILE)",
    "connection_refused": "refused the connection (ECONNREFUSED: nothing was listening)",
    "connection_reset": "dropped the connection (socket hang up / ECONNRESET)",
    "backing_service": "could not reach a backing service (an address no unit of the project serves)",
    "certificate_expired": "could not call a service whose TLS certificate has expired",
    "clock_stepped": "ran while the host's clock was stepped (timestamps and token times jumped)",
    "address_unavailable": "found no free local port for a connection (EADDRNOTAVAIL: ephemeral ports exhausted)",
    "rpc_unavailable": "lost its gRPC transport mid-call (UNAVAILABLE: a proxy or connection went away)",
    "database_starting": "reached a database that was not yet accepting connections (starting up or recovering)",
    "bus_error": "was killed by SIGBUS (bus error: the memory-mapped file's storage ran out, e.g. a full tmpfs)",
    "checksum_mismatch": "downloaded a package whose checksum does not match the lockfile (a truncated fetch)",
    "tls": "could not complete a TLS handshake (the peer's certificate was not trusted or the handshake failed)",
    "dependency_unavailable": "depends on a service that was not ready (starting, recovering, electing a leader)",
    "os_error": "hit an operating-system failure of the machine (a device, file system or network error)",
    "signaled": "was stopped by a signal from outside the process (SIGTERM, a CPU or file-size limit)",
    "runner_crashed": "could not finish: the integration runner itself crashed",
    "download_failed": "could not be set up: a package registry, mirror or image registry refused the download (throttled or failing)",
    "external_service": "depends on an outside service that refused or failed the call (rate limit or gateway error)",
}


@dataclass
class Finding:
    """The triager's conclusion: a verdict (docs/triage.md, "The verdict") plus how it was reached."""

    category: TriageCategory
    affected: list[str]
    confidence: float
    root_cause: str
    evidence: list[str]
    rule: str
    patch: SddPatch | None = None
    l3_question: str | None = None
    hints: list[str] = field(default_factory=list)


class FindingBuilder:
    """What every branch of the decision flow needs: the run, the failure, citations, the SDD matcher."""

    def __init__(self, ctx: RunContext, failure: IntegrationFailure) -> None:
        self.ctx, self.failure = ctx, failure
        self.cite = Citer(ctx)
        self.base_evidence = self.cite.failure(failure)
        self.hints: list[str] = []
        self.matcher = Matcher(ctx, failure)

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
        words = _INFRA_WORDS[top.kind]
        package = re.search(r"(?:No module named|Cannot find module) '([^']+)'|shared libraries: ([^\s:]+)", top.text)
        if top.kind == "missing_dependency" and package:
            words = f"needs the package {package.group(1) or package.group(2)!r}, which is not installed in the integration environment"
        outcome = (
            f"received {describe(f.got)} instead of {describe(f.expected)}"
            if describe(f.got) != describe(f.expected)
            else "could not run"
        )
        root = f"{who} {words}, so {self._what()} {outcome}; the environment failed, not the code — rerun"
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

    def violation(self, call: Call, required: int, req: Requirement, *, upstream: bool) -> Finding:
        """`call.provider` answered `call.status` where the SDD requires `required`: its contract decides the category."""
        unit = call.provider or "?"
        ep = exported(self.ctx, unit, call.method, call.path)
        label = self._label(call)
        sdd_cite = self.cite.clause(req.clause)
        cited, _ = self.cite.contract(unit, call.method, call.path)
        got = describe_call(call)
        trace = self.cite.trace(call.trace_line) if call.trace_line else None
        prose = next((s.prose for s in req.clause.statuses if s.code == required), False)
        condition = self._condition()
        if unit in self.ctx.contracts and (ep is None or required not in ep.responses):
            declared = "/".join(str(s) for s in sorted(ep.responses)) if ep else "nothing for this endpoint"
            root = f"{unit} returns {got} for {label} in {condition}, but the SDD requires {required}; its contract.json declares {declared}, so the contract and the SDD disagree"
            patch = SddPatch(
                target_section=f"#unit-{unit}",
                op="update_contract",
                text=f'{label}: in {condition}, respond {required} as the SDD says ("{squash(req.clause.raw)[:160]}"); {unit}\'s contract.json must declare {required}.',
            )
            key = "contract_upstream" if upstream else "contract_failing"
            evidence = [trace, sdd_cite, cited, self._coder_note(unit, call)]
            return Finding(
                "contract_mismatch",
                [unit],
                adjust(CONFIDENCE[key], prose=prose),
                root,
                evidence,
                f"contract:{'upstream' if upstream else 'failing'}",
                patch=patch,
            )
        code_note, code_cite, code_confirms = self._code_note(unit, call, required)
        root = f"{unit} returns {got} instead of {required} for {label} in {condition}, although the SDD{' and its contract.json' if ep else ''} specify {required}{code_note}"
        key = "impl_upstream" if upstream else "impl_failing"
        stack_hit = self._stack_points_to(unit)
        confidence = adjust(CONFIDENCE[key], prose=prose, code_confirms=code_confirms, stack=stack_hit)
        if not upstream and call.status in req.statuses:
            confidence -= 0.15  # the clause allows the answer it got too: which branch applies is inferred
        evidence = [trace, sdd_cite, cited, code_cite, self._coder_note(unit, call)]
        return Finding("impl_bug", [unit], confidence, root, evidence, f"impl:{'upstream' if upstream else 'failing'}")

    def body_violation(self, call: Call, req: Requirement, missing: list[str], *, upstream: bool) -> Finding:
        unit = call.provider or "?"
        ep = exported(self.ctx, unit, call.method, call.path)
        label = self._label(call)
        declared = ep.responses.get(call.status) if ep and call.status is not None else None
        declared_keys = set(top_keys(declared.body)) if declared else set()
        cited, _ = self.cite.contract(unit, call.method, call.path)
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

    def unspecified(self, call: Call) -> Finding:
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
            f'Which rule wins for {label} in {self._condition()}: "{squash(a.raw)[:100]}" ({expected}) or "{squash(b.raw)[:100]}" ({got})?',
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

    def _coder_note(self, unit: str, call: Call) -> str | None:
        """The coder.log line about this endpoint: why the unit does what it does (the coder's own account, from coder.log)."""
        log = self.ctx.coder_logs.get(unit)
        path = (exported(self.ctx, unit, call.method, call.path) or call).path or ""
        for i, line in enumerate(log.lines if log else [], 1):
            if path and path.split("?")[0] in line:
                return self.cite.line(log.rel, i)
        return None

    def history_hints(self, units: list[str]) -> list[str]:
        """find_similar_bug on bugs.ndjson and the units' last Tester runs, for the people reading the verdict."""
        f = self.failure
        similar = find_similar_bug(
            self.ctx.bugs, failure_signature(f), unit_ids=units, text=f"{f.case} {f.description} {f.message}"
        )
        hints = [f"similar bug {b.bug_id} ({b.status}, {b.category}): {b.title}" for b in similar[:3]]
        for unit in units:
            runs = self.ctx.tester_runs.get(unit) or []
            if runs:
                rel, last = runs[-1]
                state = "green" if last.ok else f"{len(last.failures)} failure(s)"
                hints.append(f"{unit}'s last unit-test run ({last.run_id or rel}) was {state}")
        return hints
