"""Verdicts for function-level (library) failures read call by call: observed values against the SDD.

    an observed call (`where 6 = mul(-2, 3)`) contradicts an SDD statement (`mul(-2, 3) returns -6`, or
    `mul(a, b)` returns `a * b` evaluated on the observed arguments):
        the unit's contract.json states the observed value             → contract_mismatch (that unit)
        otherwise                                                      → impl_bug (the unit whose code
                                                                         defines the function; every such unit)
    two SDD statements give the same call different values           → spec_ambiguous (contradiction)

Formulas are evaluated on the *observed* arguments, so each unit is judged on its own inputs: a
wrong inner value does not make the outer call look wrong.

An `impl_bug` here re-codes a unit, so it reaches auto-apply only on a verified premise (`unverified_premise`):
every SDD block that names the function states the same value for the observed call (no other statement of it,
and no later block of the same section amends it without naming a call: "the example above now gives 2"), and the case ran the unit's
own code (its test source replaces nothing: no `monkeypatch.setattr`, `mock.patch`, `mocker.patch`). Otherwise
the finding stays at `UNVERIFIED`, below auto-apply: a fact for a person.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ..models import SddPatch
from .calls import ObservedCall, Statement, observed_calls, statements, statements_in
from .cite import Citer
from .evidence_check import cite
from .findings import CONFIDENCE, Finding, describe, squash
from .functions import Definition, owner
from .pyexpr import MISSING, Undefined, same_value, show
from .run_context import RunContext
from .rundir import IntegrationFailure
from .sdd_element import sdd_blocks
from .steps import step_calls

UNVERIFIED = 0.7  # an impl:call whose premise is not checked: below auto-apply
_CALL = re.compile(r"(?<![\w.])[A-Za-z_]\w*\(")
_STAND_INS = {("monkeypatch", "setattr"), ("mock", "patch"), ("mocker", "patch"), ("patch", "object"), ("jest", "mock")}


def stand_ins(stack: str) -> list[str]:
    """The stand-ins the failing test's source (as pytest echoes it) installs: `monkeypatch.setattr(...)` and kin."""
    out = []
    for line in stack.splitlines():
        text = line.lstrip(">").strip()
        if not text or line.startswith("E "):
            continue
        try:
            tree = ast.parse(text.rstrip(":") + (" pass" if text.endswith(":") else ""))
        except (SyntaxError, ValueError, RecursionError):
            continue
        for node in ast.walk(tree):
            f = node.func if isinstance(node, ast.Call) else None
            if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and (f.value.id, f.attr) in _STAND_INS:
                out.append(f"{f.value.id}.{f.attr}")
            elif isinstance(f, ast.Name) and f.id == "patch":
                out.append("patch")
    return out


@dataclass(frozen=True)
class Check:
    """What one statement says about one observed call."""

    observed: ObservedCall
    statement: Statement
    definition: Definition
    want: Any

    @property
    def agrees(self) -> bool:
        return same_value(self.want, self.observed.value)


class CallFindings:
    """The call-level branches of the decision flow (see the module docstring)."""

    def __init__(self, ctx: RunContext, failure: IntegrationFailure) -> None:
        self.ctx, self.failure = ctx, failure
        self.cite = Citer(ctx)

    # -- facts ------------------------------------------------------------------------------

    @cached_property
    def observed(self) -> list[ObservedCall]:
        return observed_calls(self.failure)

    @cached_property
    def sdd_statements(self) -> list[Statement]:
        return statements(self.ctx.sdd_clauses, [(d.rel, d.text) for d in self.ctx.sdd_docs])

    @cached_property
    def contract_statements(self) -> list[Statement]:
        out = []
        for unit, contract in self.ctx.contracts.items():
            rel = self.ctx.contract_rel(unit)
            for fn in contract.exports.functions:
                line = self.cite.find(rel, json.dumps(fn.description)[1:-1]) if fn.description else None
                if line:
                    out += statements_in(fn.description, rel, line, units=frozenset({unit}), source="contract")
        return out

    @cached_property
    def checks(self) -> list[Check]:
        out = []
        for o in self.observed:
            definition = self._owner(o) if o.value is not MISSING else None
            for s in self.sdd_statements if definition else []:
                try:
                    want = s.expected(o.call)
                except Undefined:
                    continue
                if want is not MISSING:
                    out.append(Check(o, s, definition, want))
        return out

    # -- branches ---------------------------------------------------------------------------

    def contradicted_calls(self) -> Finding | None:
        by_call: dict[str, list[Check]] = {}
        for c in self.checks:
            by_call.setdefault(c.observed.call.text, []).append(c)
        for checks in by_call.values():
            values = {show(c.want) for c in checks}
            if len(values) > 1:
                return self._sdd_contradiction(checks)
        wrong: dict[str, Check] = {}
        # the deepest call first; of the statements that contradict it, a formula (evaluated on the observed arguments,
        # the SDD's general rule) before an example of it
        for c in sorted(self.checks, key=lambda c: (-c.observed.depth, not c.statement.formula)):
            if not c.agrees:
                wrong.setdefault(c.definition.unit_id, c)
        if not wrong:
            return None
        first = next(iter(wrong.values()))
        contract = self._contract_agrees_with_code(first)
        if contract is not None:
            return self._contract_call(first, contract)
        units = list(wrong)
        causes = [self._wrong_value(c) for c in wrong.values()]
        root = (
            "; ".join(causes)
            + f", so case {self.failure.case} step {self.failure.step} received {describe(self.failure.got)}"
            + f" instead of {describe(self.failure.expected)}"
        )
        evidence = [e for c in wrong.values() for e in self._check_evidence(c)]
        key = "impl_call_formula" if first.statement.formula else "impl_call"
        confidence = CONFIDENCE[key] - (0.1 if first.definition.unit_id not in self.failure.involves else 0.0)
        same_call = [c for c in self.checks if c.observed.call == first.observed.call and not c.agrees]
        doubt = next(filter(None, map(self.unverified_premise, same_call)), None)  # every statement it rests on
        hints = [f"confidence {UNVERIFIED}: {doubt}"] if doubt else []
        confidence = min(confidence, UNVERIFIED) if doubt else confidence
        return Finding("impl_bug", units, confidence, root, evidence, key.replace("_", ":", 1), hints=hints)

    def unverified_premise(self, c: Check) -> str | None:
        """Why the statement or the observation may not be what it seems, or None when both are checked."""
        if stand_ins(self.failure.stack or ""):
            return (
                "the case replaces part of the code it calls (" + ", ".join(stand_ins(self.failure.stack or "")) + ")"
            )
        s = c.statement
        agree = {(x.statement.doc, x.statement.line) for x in self.checks if x.observed.call == c.observed.call}
        docs = [(d.rel, d.text) for d in self.ctx.sdd_docs]
        blocks = [b for rel, text in docs if rel == s.doc for b in sdd_blocks(rel, text, self.ctx.units.ids())]
        cited = next((b for b in blocks if b.first <= s.line <= b.last), None)
        name = re.compile(rf"(?<![\w.]){re.escape(s.call.name)}\s*\(")
        for rel, text in docs:
            for b in sdd_blocks(rel, text, self.ctx.units.ids()):
                if cited is not None and (rel, b.first) == (s.doc, cited.first):
                    continue
                if any(rel == doc and b.first <= line <= b.last for doc, line in agree):
                    continue  # a statement giving the same value for this call confirms it
                if name.search(b.text):
                    return f"the SDD also speaks of {s.call.name} at {rel}:{b.first}"
                later = cited is not None and rel == s.doc and b.first > cited.last and b.unit == cited.unit
                if later and not _CALL.search(b.text):
                    return f"a later statement of the same section ({rel}:{b.first}) may amend it"
        return None

    # -- builders ---------------------------------------------------------------------------

    def _wrong_value(self, c: Check) -> str:
        s, o = c.statement, c.observed
        said = f"{s.call.text} returns {s.text}, i.e. {show(c.want)}" if s.formula else show(c.want)
        text = (
            f"{c.definition.unit_id} returns {o.value_text} for {o.call.text} where the SDD ({s.where()}) says {said}"
        )
        returns = c.definition.returns
        if len(returns) == 1:
            line = self.cite.lines(c.definition.rel)[returns[0] - 1].strip()
            text += f" ({c.definition.rel}:{returns[0]}: `{line[:80]}`)"
        return text

    def _check_evidence(self, c: Check) -> list[str | None]:
        d = c.definition
        code = [self.cite.line(d.rel, d.line)] + ([self.cite.line(d.rel, d.returns[0])] if len(d.returns) == 1 else [])
        return [self._cite_statement(c.statement), *code, self._cite_failure_text(c.observed.quote)]

    def _contract_agrees_with_code(self, c: Check) -> Statement | None:
        for s in self.contract_statements:
            if c.definition.unit_id not in s.units:
                continue
            try:
                want = s.expected(c.observed.call)
            except Undefined:
                continue
            if want is not MISSING and same_value(want, c.observed.value):
                return s
        return None

    def _contract_call(self, c: Check, contract: Statement) -> Finding:
        unit, o, s = c.definition.unit_id, c.observed, c.statement
        root = f"{unit} returns {o.value_text} for {o.call.text} as its contract.json states ({contract.quote}), but the SDD ({s.where()}) says {show(c.want)}: the contract and the SDD disagree"
        patch = SddPatch(
            target_section=f"#unit-{unit}",
            op="update_contract",
            text=f'{o.call.text} returns {show(c.want)} as the SDD says ("{squash(s.quote)[:140]}"); the contract.json of {unit} must say the same.',
        )
        evidence = [self._cite_statement(s), self._cite_statement(contract), self._cite_failure_text(o.quote)]
        return Finding(
            "contract_mismatch", [unit], CONFIDENCE["contract_call"], root, evidence, "contract:call", patch=patch
        )

    def _sdd_contradiction(self, checks: list[Check]) -> Finding:
        a, b = checks[0], next(c for c in checks if show(c.want) != show(checks[0].want))
        call = a.observed.call.text
        root = f"The SDD contradicts itself about {call}: {a.statement.where()} gives {show(a.want)}, {b.statement.where()} gives {show(b.want)}; {a.definition.unit_id} returns {a.observed.value_text}"
        trace_line = step_calls(self.ctx, self.failure)[-1].trace_line
        evidence = [self.cite.trace(trace_line)] if trace_line else []
        finding = Finding("spec_ambiguous", [], CONFIDENCE["spec_contradiction"], root, evidence, "spec:contradiction",
                          l3_question=f"Which is right for {call}: {show(a.want)} or {show(b.want)}?")  # fmt: skip
        finding.evidence += [
            self._cite_statement(a.statement),
            self._cite_statement(b.statement),
            self._cite_failure_text(a.observed.quote),
        ]
        return finding

    # -- helpers ----------------------------------------------------------------------------

    def _owner(self, o: ObservedCall) -> Definition | None:
        if o.call.name not in self._owners:
            self._owners[o.call.name] = owner(self.ctx, o.call.name, self.failure.involves)
        return self._owners[o.call.name]

    @cached_property
    def _owners(self) -> dict[str, Definition | None]:
        return {}

    def _cite_statement(self, s: Statement) -> str | None:
        if s.source == "contract" or not s.quote:
            return self.cite.line(s.doc, s.line, s.quote[:30] or None)
        return cite(s.doc, s.line, s.quote)

    def _cite_failure_text(self, text: str) -> str | None:
        """A verbatim slice of result.json (strings are JSON-escaped there) that shows `text`."""
        rel = f"{self.ctx.run_rel}/result.json"
        needle = json.dumps(text.strip())[1:-1][:200]
        at = self.cite.find(rel, needle) if needle else None
        return cite(rel, at, needle) if at is not None else None
