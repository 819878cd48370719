"""Typed findings: what one mechanism read in the run, as facts with their quotes, voices and the sides that confirm.

A finding is not a verdict. It says which mechanism found it (`rule`: `infra:disk_full`, `contract:status_differs`,
`impl:uncaught`, ...), the category and units it points to, a sentence that names the behaviour, the verbatim
evidence (`path:line: quote`), the quotes with their voices (`said`), the sides that confirm it and, for a
contract patch, the SDD statement and interface element it rests on. The decider (decider.py) turns findings into
the verdict; the agent's tools and the person read them as they are.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..models import SddPatch, TriageCategory
from .rundir import Observation
from .voice import Said

# what the call-level mechanisms claim (callfindings.py)
CONFIDENCE = {"contract_call": 0.8, "impl_call": 0.8, "impl_call_formula": 0.8, "spec_contradiction": 0.55}


@dataclass(frozen=True)
class Element:
    """What a contract patch would change: the SDD statement it rests on and the interface element it is about
    (an endpoint with the status class, or the endpoint's path) — sdd_element.py reads the whole SDD for others."""

    statement: str  # "sdd.md:12": the SDD line the finding cites
    method: str | None
    path: str  # the endpoint's path template as the SDD writes it
    statuses: tuple[int, ...] = ()  # the status in question (its class counts), none for a path
    names: tuple[str, ...] = ()  # other identifiers of the element (a renamed path, a function name)
    unit: str | None = None  # the unit that provides it (its section's prose may speak of it)


@dataclass
class Finding:
    category: TriageCategory
    affected: list[str]
    confidence: float
    root_cause: str
    evidence: list[str]
    rule: str  # the mechanism that found it
    patch: SddPatch | None = None
    l3_question: str | None = None
    hints: list[str] = field(default_factory=list)
    said: list[Said] = field(default_factory=list)
    confirmed_by: tuple[str, ...] = ()
    element: Element | None = None
    facts: list[Finding] = field(default_factory=list)  # on a verdict: every finding the decider read

    def as_fact(self) -> dict:
        """The finding as the agent's tools and the person see it."""
        return {
            "mechanism": self.rule, "suggests": self.category, "units": self.affected, "claim": self.root_cause,
            "confidence": self.confidence, "evidence": [e for e in self.evidence if e],
            "quotes": [s.as_dict() for s in self.said], "confirmed_by": list(self.confirmed_by),
        }  # fmt: skip


def describe(o: Observation) -> str:
    """An observation in words: `401`, `no response (connect ECONNREFUSED ...)`, `value {...}`."""
    if o.error:
        return f"no response ({o.error.strip()[:80]})"
    if o.status is not None:
        return str(o.status)
    if o.value is not None:
        return f"value {short(o.value)}"
    return f"body {short(o.body)}" if o.body is not None else "nothing"


def short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def squash(text: str) -> str:
    return " ".join(text.split())
