"""Verdicts for a call that does not fit the function it calls (function-level / library failures).

    a call's arguments do not fit the function (TypeError: f() takes / got an unexpected keyword):
        the contract's signature differs from the SDD's               → contract_mismatch (that unit)
        the code's `def` differs from what contract / SDD declare      → impl_bug (the defining unit)
        all three agree                                                → impl_bug (the calling unit)
    one unit's function returns what another's cannot take (TypeError / AttributeError raised inside
    the consumer, and the two contract.json signatures declare different types for that value):
        the SDD names one of the two types                             → contract_mismatch (the other unit)
        the SDD names neither                                          → contract_mismatch (the consumer, 0.6)

The value branches (an observed call contradicts the SDD) are in `callfindings.py`.
"""

from __future__ import annotations

import ast
import json
import re

from ..models import SddPatch
from .calls import failing_source
from .evidence_check import cite
from .findings import CONFIDENCE, Finding, FindingBuilder
from .functions import (
    Param,
    Signature,
    compatible,
    contract_function,
    contract_signature,
    mentions,
    owner,
    type_names,
)
from .pyexpr import CALL_START, MISSING, call_of, matching_paren, parse_call
from .sdd import Clause
from .signals import stack_frames, unit_of_path
from .verdict_helpers import squash

_SIGNATURE_ERROR = re.compile(
    r"(?P<name>[A-Za-z_][\w.]*)\(\) (?:takes (?:from )?\d+ (?:to \d+ )?positional arguments? but \d+ (?:was|were) given"
    r"|got an unexpected keyword argument '\w+'|missing \d+ required (?:positional|keyword-only) arguments?: .+"
    r"|got multiple values for argument '\w+')"
)
_TYPE_ERROR = re.compile(r"\b(TypeError|AttributeError)\b:?\s*(.*)")


class FitFindings(FindingBuilder):
    """Signature and type disagreements between a call, the function's code, contracts and the SDD."""

    def signature_mismatch(self) -> Finding | None:
        m = _SIGNATURE_ERROR.search(f"{self.failure.message}\n{self.failure.stack}")
        if m is None:
            return None
        name = m.group("name").rsplit(".", 1)[-1]
        d = owner(self.ctx, name, self.failure.involves)
        if d is None or d.signature is None:
            return None
        unit = d.unit_id
        entry = next((fn for fn in self._contract_functions(unit) if fn.name.rsplit(".", 1)[-1] == name), None)
        declared = contract_signature(entry) if entry else None
        sdd = self._sdd_signature(name, unit)
        error = self._cite_failure_text(m.group(0))
        code = self.cite.code(d.rel, d.line)
        if declared and sdd and declared.names() != sdd[0].names():
            root = f"the contract.json of {unit} declares {declared.text()} but the SDD ({self._where(sdd[1])}) writes {sdd[2]}, and {unit} follows its contract, so the call fails: {m.group(0)}"
            patch = SddPatch(
                target_section=f"#unit-{unit}",
                op="update_contract",
                text=f'{name} takes ({", ".join(sdd[0].names())}) as the SDD says ("{sdd[2]}"); the contract.json of {unit} must declare the same parameters.',
            )
            evidence = [self._cite_contract_function(unit, name), self.cite.clause(sdd[1]), code, error]
            return Finding(
                "contract_mismatch",
                [unit],
                CONFIDENCE["contract_signature"],
                root,
                evidence,
                "contract:signature",
                patch=patch,
            )
        wanted = declared or (sdd[0] if sdd else None)
        if wanted is None:
            return None
        said = "its contract.json" + (" and the SDD" if sdd else "") if declared else "the SDD"
        evidence = [
            code,
            self._cite_contract_function(unit, name) if declared else None,
            self.cite.clause(sdd[1]) if sdd else None,
            error,
        ]
        if d.signature.names() != wanted.names():
            root = f"{unit} defines {d.signature.text()} ({d.rel}:{d.line}) but {said} declare {wanted.text()}, so calling it fails: {m.group(0)}"
            return Finding("impl_bug", [unit], CONFIDENCE["impl_signature"], root, evidence, "impl:signature")
        caller = self._raising_unit()
        if caller is None or caller == unit:
            return None
        root = f"{caller} calls {name} in a way its definition ({d.signature.text()}, as {said} declare) does not accept: {m.group(0)}"
        return Finding(
            "impl_bug", [caller], CONFIDENCE["impl_signature"] - 0.06, root, evidence, "impl:caller_signature"
        )

    def type_mismatch(self) -> Finding | None:
        error = _TYPE_ERROR.search(self.failure.message or "") or _TYPE_ERROR.search(self.failure.stack or "")
        source = failing_source(self.failure)
        if error is None or source is None:
            return None
        raised_in = self._raising_unit()
        for node in ast.walk(source[0]):
            if not isinstance(node, ast.Call) or (consumer := call_of(node)) is None:
                continue
            args = [(i, None, a) for i, a in enumerate(node.args)] + [(None, k.arg, k.value) for k in node.keywords]
            for position, keyword, arg in args:
                provider = call_of(arg) if isinstance(arg, ast.Call) else None
                found = self._type_disagreement(consumer.name, position, keyword, provider.name if provider else None)
                if found is not None and found[0] == raised_in:
                    return self._contract_types(*found, error=error.group(0).strip())
        return None

    def _type_disagreement(
        self, consumer: str, position: int | None, keyword: str | None, provider: str | None
    ) -> tuple[str, str, Signature, Signature, Param] | None:
        """(consumer unit, provider unit, consumer signature, provider signature, the parameter that takes the value)."""
        if provider is None:
            return None
        found_c, found_p = contract_function(self.ctx, consumer), contract_function(self.ctx, provider)
        if found_c is None or found_p is None or found_c[0] == found_p[0]:
            return None
        sig_c, sig_p = contract_signature(found_c[1]), contract_signature(found_p[1])
        param = sig_c.param_for(position, keyword) if sig_c else None
        if sig_c is None or sig_p is None or param is None or not param.annotation or not sig_p.returns:
            return None
        if compatible(sig_p.returns, param.annotation):
            return None
        return found_c[0], found_p[0], sig_c, sig_p, param

    def _contract_types(
        self, consumer: str, provider: str, sig_c: Signature, sig_p: Signature, param: Param, *, error: str
    ) -> Finding:
        wanted, given = param.annotation, sig_p.returns
        scope = [
            c
            for c in self.ctx.sdd.clauses
            if c.units & {consumer, provider} or re.search(rf"\b(?:{sig_c.name}|{sig_p.name})\(", c.raw)
        ]
        want_types, give_types = type_names(wanted) - type_names(given), type_names(given) - type_names(wanted)
        says_want = [c for c in scope if any(mentions(c.raw, t) for t in want_types)]
        says_give = [c for c in scope if any(mentions(c.raw, t) for t in give_types)]
        if says_want and not says_give:
            unit, clause, right, confidence = (
                provider,
                says_want[0],
                f"{sig_p.name}(...) -> {wanted}",
                CONFIDENCE["contract_types"],
            )
        elif says_give and not says_want:
            unit, clause, right, confidence = (
                consumer,
                says_give[0],
                f"{sig_c.name}({param.name}: {given})",
                CONFIDENCE["contract_types"],
            )
        else:
            unit, clause, right, confidence = (
                consumer,
                None,
                f"{sig_c.name}({param.name}: {given})",
                CONFIDENCE["contract_types_consumer"],
            )
        sided = (
            f'; the SDD sides with {wanted if unit == provider else given} ({self._where(clause)}: "{squash(clause.raw)[:100]}")'
            if clause
            else "; the SDD names neither type"
        )
        root = f"the contract.json of {provider} declares {sig_p.text()} but that of {consumer} declares {sig_c.text()}: {consumer} receives a {given} where it expects {wanted} and raises {error[:120]}{sided}"
        patch = SddPatch(
            target_section=f"#unit-{unit}",
            op="update_contract",
            text=f"{sig_p.name} hands {sig_c.name} its {param.name}: both contracts must use one type; the contract.json of {unit} must declare {right}.",
        )
        evidence = [
            self._cite_contract_function(provider, sig_p.name),
            self._cite_contract_function(consumer, sig_c.name),
            self.cite.clause(clause) if clause else None,
            self._cite_failure_text(error[:80]),
        ]
        return Finding("contract_mismatch", [unit], confidence, root, evidence, "contract:types", patch=patch)

    def _contract_functions(self, unit: str) -> list:
        contract = self.ctx.contracts.get(unit)
        return list(contract.exports.functions) if contract else []

    def _clauses_naming(self, name: str) -> list[Clause]:
        return [c for c in self.ctx.sdd.clauses if re.search(rf"(?<![\w.]){re.escape(name)}\(", c.raw)]

    def _sdd_signature(self, name: str, unit: str) -> tuple[Signature, Clause, str] | None:
        """The first mention of `name(...)` with parameter names (`slugify(title, sep="-")`) in `unit`'s SDD section.

        Elsewhere a mention such as `add(mul(x1, y1), ...)` names the caller's variables, not the parameters."""
        for clause in self._clauses_naming(name):
            if unit not in clause.units:
                continue
            for m in CALL_START.finditer(clause.raw):
                end = matching_paren(clause.raw, m.end() - 1)
                call = parse_call(clause.raw[m.start() : end + 1]) if end is not None else None
                params = call.parameters() if call and call.name == name and call.args else None
                if params is not None and end is not None:
                    sig = Signature(name, tuple(Param(p, has_default=d is not MISSING) for p, d in params))
                    return sig, clause, clause.raw[m.start() : end + 1]
        return None

    def _raising_unit(self) -> str | None:
        """The unit whose code the stack's last frame is in (where the error was raised)."""
        frames = stack_frames(self.failure.stack)
        hit = unit_of_path(self.ctx, frames[-1][0]) if frames else None
        return hit[0] if hit else None

    def _where(self, clause: Clause | None) -> str:
        if clause is None:
            return "the SDD"
        name = clause.doc.rsplit("/", 1)[-1]
        return f'"{clause.section}", {name}:{clause.line}' if clause.section else f"{name}:{clause.line}"

    def _cite_failure_text(self, text: str) -> str | None:
        """A verbatim slice of result.json (strings are JSON-escaped there) that shows `text`."""
        rel = f"{self.ctx.run_rel}/result.json"
        needle = json.dumps(text.strip())[1:-1][:200]
        at = self.cite.find(rel, needle) if needle else None
        return cite(rel, at, needle) if at is not None else None

    def _cite_contract_function(self, unit: str, name: str) -> str | None:
        """The contract.json line of the function entry (`"name": "f"`; its signature when on its own line)."""
        rel = self.ctx.contract_rel(unit)
        lines = self.cite.lines(rel)
        entry = re.compile(rf'"name"\s*:\s*"(?:[\w.]+\.)?{re.escape(name)}"')
        at = next((i for i, text in enumerate(lines, 1) if entry.search(text)), None)
        if at is None:
            return None
        signature = next((i for i in range(at, min(at + 3, len(lines)) + 1) if '"signature"' in lines[i - 1]), at)
        return self.cite.line(
            rel, signature, '"signature"' if signature != at or '"signature"' in lines[at - 1] else '"name"'
        )
