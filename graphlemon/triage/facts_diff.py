"""Declared facts compared across sides (`facts.py`): a contradiction between two sides is a `value_differs`
finding, and the category follows from which sides agree.

The sides are the SDD and the contract.json of each unit the failing case involves. For each subject a unit
declares, two statements contradict when an aspect both state differs (a unit, an enumeration's values or case,
a range, a field number, a key layout, a JSON type); one that states an aspect the other leaves out refines it.

- The SDD states the aspect and agrees with one side, and another unit contradicts it → `contract_mismatch` for
  that unit (a unit alone contradicting a self-consistent SDD is blamed too).
- Two units contradict each other and the SDD, naming the subject, states neither's value → `spec_ambiguous`.
- The SDD states both values (each side has its SDD line) → `spec_ambiguous`: the SDD contradicts itself.

Confidence stays below auto-apply unless the trace confirms the departing side: a traced value of the subject
fits the blamed side's declaration and not the SDD's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .cite import Citer
from .facts import MAX_TEXT, Fact, contract_facts, sdd_facts, walk
from .findings import Finding
from .interface import Side
from .interface_diff import InterfaceFinding
from .interface_verdict import CONFIRMED, CONTRADICTION, TWO_SIDES, interface_verdict
from .matching import Call
from .nullability import leaves, tokens
from .run_context import RunContext
from .rundir import IntegrationFailure

UNSTATED = 0.5  # two units contradict each other and the SDD states neither value: a person decides


@dataclass(frozen=True)
class ValueContradiction:
    finding: InterfaceFinding
    confirmed: bool  # the trace shows a value that fits the blamed side and not the SDD


def value_contradiction(ctx: RunContext, failure: IntegrationFailure, calls: list[Call]) -> ValueContradiction | None:
    """The first contradiction between declared facts of the failing case's units and the SDD, else None."""
    units = [u for u in dict.fromkeys(failure.involves) if u in ctx.contracts]
    stated = {u: _consistent(contract_facts(ctx.contract_rel(u), _text(ctx, ctx.contract_rel(u)))) for u in units}
    subjects = {s for facts in stated.values() for s in facts}
    if not subjects:
        return None
    spec: dict[str, list[Fact]] = {}
    for doc in ctx.sdd_docs:
        for fact in sdd_facts(doc.rel, doc.text, subjects):
            spec.setdefault(fact.subject, []).append(fact)
    words = {w for d in ctx.sdd_docs if len(d.text) <= MAX_TEXT for w in tokens(d.text)}
    values = _traced(calls)
    for subject in sorted(subjects):
        said = {u: stated[u][subject] for u in units if subject in stated[u]}
        found = _judge(ctx, subject, said, spec.get(subject, []), subject in words, values.get(subject, []))
        if found is not None:
            return found
    return None


def _judge(ctx: RunContext, subject: str, said: dict[str, Fact], spec: list[Fact], named: bool,
           values: list[Any]) -> ValueContradiction | None:  # fmt: skip
    for unit, fact in said.items():
        against = [s for s in spec if fact.declared.contradicts(s.declared)]
        aspects = {fact.declared.contradicts(s.declared) for s in against}
        backing = [s for s in spec if s not in against and _states(s, aspects)]
        if not against or backing:
            continue
        if any(a.declared.contradicts(b.declared) for a in spec for b in spec):
            continue  # the SDD states two values: judged below, when a unit holds each
        others = [u for u, f in said.items() if u != unit and not f.declared.contradicts(against[0].declared)]
        agree = tuple(_side(ctx, u, said) for u in others if _states(said[u], aspects))
        confirmed = _confirmed(values, fact, against[0])
        return ValueContradiction(
            InterfaceFinding(
                "value_differs", "contract_mismatch", (unit,), subject, subject,
                "spec", against[0].at, f"{subject} is {against[0].declared.says()}",
                _side(ctx, unit, said), fact.at, f"{unit} declares {subject} {fact.declared.says()}",
                agree=agree, with_b=("trace",) if confirmed else (),
            ),
            confirmed,
        )  # fmt: skip
    for (u1, f1), (u2, f2) in _pairs(said):
        aspect = f1.declared.contradicts(f2.declared)
        if aspect is None:
            continue
        for_1 = [s for s in spec if not s.declared.contradicts(f1.declared) and _states(s, {aspect})]
        for_2 = [s for s in spec if not s.declared.contradicts(f2.declared) and _states(s, {aspect})]
        side_1, side_2 = _side(ctx, u1, said), _side(ctx, u2, said)
        if for_1 and for_2:  # the SDD states both values: it contradicts itself
            return ValueContradiction(
                InterfaceFinding(
                    "value_differs", "spec_ambiguous", (), subject, subject,
                    "spec", for_1[0].at, f"{subject} is {for_1[0].declared.says()}",
                    "spec", for_2[0].at, f"{subject} is {for_2[0].declared.says()}",
                    agree=(side_1,), with_b=(side_2,),
                ),
                False,
            )  # fmt: skip
        if not for_1 and not for_2 and named:
            return ValueContradiction(
                InterfaceFinding(
                    "value_differs", "spec_ambiguous", (), subject, subject,
                    side_1, f1.at, f"{u1} declares {subject} {f1.declared.says()}",
                    side_2, f2.at, f"{u2} declares {subject} {f2.declared.says()}",
                ),
                False,
            )  # fmt: skip
    return None


def value_verdict(found: ValueContradiction, failure: IntegrationFailure, cite: Citer) -> Finding:
    """The verdict of a contradiction: the departing unit's contract_mismatch, or a question for a person."""
    f = found.finding
    if f.category == "contract_mismatch":
        finding = interface_verdict(f, failure, cite)
        finding.confidence = min(finding.confidence, CONFIRMED if found.confirmed else TWO_SIDES)
        return finding
    both = f.a_side == f.b_side == "spec"
    evidence = [e for e in (cite.line(f.a.rel, f.a.line), cite.line(f.b.rel, f.b.line)) if e]
    if both:
        root = (
            f"The SDD states {f.subject} two ways: {f.a_says} ({f.a.rel}:{f.a.line}), as one unit declares, but "
            f"{f.b_says} ({f.b.rel}:{f.b.line}), as the other does; which holds is for a person to decide"
        )
    else:
        root = (
            f"The units disagree about {f.subject}: {f.a_says} ({f.a.rel}:{f.a.line}), but {f.b_says} "
            f"({f.b.rel}:{f.b.line}); the SDD names {f.subject} without stating either, so it does not say who is right"
        )
    question = f"What is {f.subject}: {_value(f.a_says, f.subject)} or {_value(f.b_says, f.subject)}?"
    return Finding(
        "spec_ambiguous", [], CONTRADICTION if both else UNSTATED, root, evidence, "spec:value_differs",
        l3_question=question, hints=[f"interface: {f.shows()}"],
    )  # fmt: skip


def _consistent(facts: list[Fact]) -> dict[str, Fact]:
    """subject → the unit's statement of it; a subject the unit states two contradicting ways is left out."""
    by: dict[str, list[Fact]] = {}
    for fact in facts:
        by.setdefault(fact.subject, []).append(fact)
    out: dict[str, Fact] = {}
    for subject, xs in by.items():
        if any(a.declared.contradicts(b.declared) for a in xs for b in xs):
            continue
        out[subject] = max(xs, key=lambda f: len(f.declared.says()))
    return out


def _states(fact: Fact, aspects: Iterable[str | None]) -> bool:
    d = fact.declared
    return any(a is not None and getattr(d, a) is not None for a in aspects)


def _confirmed(values: list[Any], blamed: Fact, spec: Fact) -> bool:
    return any(blamed.declared.fits(v) is True and spec.declared.fits(v) is False for v in values)


def _traced(calls: list[Call]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for call in calls:
        for body in (call.body, call.request_body):
            if isinstance(body, dict | list):
                for name, value in leaves(body):
                    out.setdefault(name, []).append(value)
    return out


def _side(ctx: RunContext, unit: str, said: dict[str, Fact]) -> Side:
    """`consumer` for a unit whose contract names another unit stating the subject as the one it reads from (an
    entry's `unit_id`: `consumes`, `subscribes`, any such list), else `contract`."""
    others = set(said) - {unit}
    try:
        doc = json.loads(_text(ctx, ctx.contract_rel(unit)))
    except ValueError:
        return "contract"
    named = {v for k, v in walk(doc) if k == "unit_id"}  # its own id is not among the others
    return "consumer" if named & others else "contract"


def _pairs(said: dict[str, Fact]) -> list[tuple[tuple[str, Fact], tuple[str, Fact]]]:
    items = list(said.items())
    return [(a, b) for i, a in enumerate(items) for b in items[i + 1 :]]


def _value(says: str, subject: str) -> str:
    """What a side's statement gives the subject ("tip-widget declares amount_minor in cents" → "in cents")."""
    return says.split(f" {subject} ", 1)[-1] if f" {subject} " in says else says


def _text(ctx: RunContext, rel: str) -> str:
    try:
        return ctx.file_text(rel)
    except OSError:
        return ""


__all__ = ["ValueContradiction", "value_contradiction", "value_verdict"]
