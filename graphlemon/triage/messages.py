"""Message channels compared by structure: the subject (NATS), topic (Kafka, MQTT) or routing key (AMQP) a provider
publishes on vs the one its consumer subscribes to vs the one the SDD states.

The sides are read with parsers: each unit's contract.json (`exports.events` / `publishes` entries with a
`subject` or `topic` publish; `subscribes` entries, naming the publishing unit by `unit_id`, subscribe) and the
SDD's code spans in each unit's section (markdown). A consumer that subscribes to a subject its publisher never
publishes on receives nothing. The side that departs from the SDD is blamed: the SDD states the consumer's subject
and not the publisher's → the publisher's contract (`subject_differs`, confirmed by the consumer); the reverse →
the consumer's. When the SDD names neither, no finding: a person decides (the case then falls through the flow).

Subjects match token by token (`.` or `/` separated); `*` / `+` stand for one token, `>` / `#` for the rest.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from .interface import Quote
from .interface_diff import InterfaceFinding
from .interface_sdd import code_spans
from .run_context import RunContext
from .rundir import IntegrationFailure

Role = Literal["publishes", "subscribes"]
_MAX_CONTRACT_BYTES = 1_000_000  # a contract larger than this is not read for channels


@dataclass(frozen=True)
class Channel:
    unit: str
    role: Role
    subject: str
    transport: str
    at: Quote
    peer: str | None = None  # for a subscription: the unit it expects the messages from


def channels(ctx: RunContext) -> list[Channel]:
    """Every channel the units' contract.json files declare."""
    out: list[Channel] = []
    for unit in ctx.units.ids():
        rel = ctx.contract_rel(unit)
        doc = _contract(ctx, rel)
        if not isinstance(doc, dict):
            continue
        lines = ctx.file_text(rel).splitlines()
        exports = doc.get("exports") if isinstance(doc.get("exports"), dict) else {}
        published = [*_entries(exports.get("events")), *_entries(doc.get("publishes"))]
        for role, entries in (("publishes", published), ("subscribes", _entries(doc.get("subscribes")))):
            for entry in entries:
                subject = entry.get("subject") or entry.get("topic")
                if not isinstance(subject, str) or not subject.strip():
                    continue
                peer = entry.get("unit_id") if isinstance(entry.get("unit_id"), str) else None
                transport = entry.get("transport") if isinstance(entry.get("transport"), str) else "message"
                out.append(Channel(unit, role, subject, transport, Quote(rel, _line_of(lines, subject)), peer))  # type: ignore[arg-type]
    return out


def subject_findings(ctx: RunContext, failure: IntegrationFailure) -> list[InterfaceFinding]:
    """Subscriptions of the case's units that no publisher they name publishes on, judged by the SDD."""
    declared = channels(ctx)
    out: list[InterfaceFinding] = []
    for sub in declared:
        if sub.role != "subscribes" or sub.unit not in failure.involves:
            continue
        pubs = [
            c
            for c in declared
            if c.role == "publishes"
            and c.unit != sub.unit
            and c.unit in failure.involves
            and sub.peer in (None, c.unit)
        ]
        if not pubs or any(matches(sub.subject, p.subject) for p in pubs):
            continue
        found = _judged(ctx, sub, pubs[0])
        if found is not None:
            out.append(found)
    return out


def matches(pattern: str, subject: str) -> bool:
    """A subscription's subject (which may hold wildcards) receives messages published on `subject`."""
    want, have = _tokens(pattern), _tokens(subject)
    for i, token in enumerate(want):
        if token in (">", "#"):
            return len(have) > i
        if i >= len(have) or token not in ("*", "+", have[i]):
            return False
    return len(want) == len(have)


def _judged(ctx: RunContext, sub: Channel, pub: Channel) -> InterfaceFinding | None:
    ids = ctx.units.ids()
    spans = [(d.rel, s, n) for d in ctx.sdd_docs for u in (pub.unit, sub.unit) for s, n in code_spans(d.text, u, ids)]
    says_sub = next(((rel, n) for rel, s, n in spans if matches(sub.subject, s) and matches(s, sub.subject)), None)
    says_pub = next(((rel, n) for rel, s, n in spans if s == pub.subject), None)
    endpoint = f"{pub.transport} {sub.subject}"
    if says_sub is not None and says_pub is None:
        return InterfaceFinding(
            "subject_differs", "contract_mismatch", (pub.unit,), endpoint, "subject",
            "spec", Quote(*says_sub), f"{pub.unit} publishes on {sub.subject}",
            "contract", pub.at, f"{pub.unit} publishes on {pub.subject}", agree=("consumer",),
        )  # fmt: skip
    if says_pub is not None and says_sub is None:
        return InterfaceFinding(
            "subject_differs", "contract_mismatch", (sub.unit,), f"{pub.transport} {pub.subject}", "subject",
            "spec", Quote(*says_pub), f"{sub.unit} subscribes to {pub.subject}, on which {pub.unit} publishes",
            "consumer", sub.at, f"{sub.unit} subscribes to {sub.subject}", agree=("contract",),
        )  # fmt: skip
    return None


def _contract(ctx: RunContext, rel: str) -> object:
    path = ctx.root / rel
    try:
        if not path.is_file() or path.stat().st_size > _MAX_CONTRACT_BYTES:
            return None
        return json.loads(path.read_bytes().decode("utf-8", errors="replace"))
    except (OSError, ValueError):
        return None


def _entries(value: object) -> list[dict]:
    return [x for x in value if isinstance(x, dict)] if isinstance(value, list) else []


def _tokens(subject: str) -> list[str]:
    return subject.strip().replace("/", ".").split(".")


def _line_of(lines: list[str], subject: str) -> int:
    quoted = json.dumps(subject)
    return next((n for n, x in enumerate(lines, 1) if quoted in x), 1)


__all__ = ["Channel", "channels", "matches", "subject_findings"]
