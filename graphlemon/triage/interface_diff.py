"""Structural comparison of the interface model: SDD vs provider contract vs consumer contract vs code vs trace.

Each disagreement is a typed `InterfaceFinding` with the two lines that disagree. The category follows from
which sides agree (the decision flow, docs/triage.md): the SDD and the implementation's contract agree and the run did otherwise
→ `impl_bug`; a contract.json disagrees with the SDD (or a consumer's with its provider and the SDD) →
`contract_mismatch` for that contract's unit; the request that failed differs from one that succeeded only by
an input the SDD never mentions → `spec_ambiguous`.

Kinds:
- `path_differs`     the step called a path its provider does not serve; one side declares that path, the
                     others another path with the same method;
- `field_missing`    a response field one side states is absent from another side (contract, consumer, trace);
- `fields_disagree`  two SDD statements list the same answer's fields, one with a field the other replaces by a
                     field that the contract (or the trace) has: the SDD names the answer's fields two ways;
- `status_differs`   the status the case expects is the SDD's, and the contract (or the run) answers another one
                     that the SDD never states for the endpoint; or a call of the step (upstream) was answered
                     with a status the SDD never states for its endpoint;
- `status_unproduced` the SDD and the provider's contract state the status the case expects for the endpoint,
                     and the endpoint's handler never produces it (it does produce the status the run got);
- `limit_violated`   the SDD limits a count ("at most three") with a status beyond it; the trace shows the call
                     past the limit answered with success; or the SDD limits a quantity of the request (its size
                     in bytes, a text input's length, a number) and the request past the limit was accepted, or
                     the request within it refused;
- `limits_disagree`  two SDD statements limit the same quantity of the request (its size, a text's length, a
                     number) differently, and the failing request lies between them: the SDD contradicts itself;
- `subject_differs`  a consumer subscribes to a message subject (topic) its publisher does not publish on, and the
                     SDD states one of the two (messages.py);
- `nullable_differs` a field of an answer the SDD says may (or may never) be null, that a contract declares the other
                     way, and the traced answer did what that contract says (nullability.py);
- `measure_differs`  a field's unit (minutes vs seconds, MiB vs bytes) or date format (YYYY-MM-DD vs DD/MM/YYYY)
                     that a contract states otherwise than the SDD, the traced values fitting that contract (measures.py);
- `value_differs`    a declared fact of a subject (unit, enumeration, range, field number, key layout, type) that
                     two sides state and contradict (facts_diff.py);
- `required_differs` a call refused (4xx) for leaving out a request field the SDD's table marks optional (required.py);
- `input_unspecified` the failing request differs from a request that got the expected answer only by inputs
                     the SDD does not mention.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, replace
from typing import Literal
from urllib.parse import parse_qsl, urlsplit

from ..models import TriageCategory
from .interface import SIDE_NAMES, Limit, Operation, Quote, Side, field_paths, number_text
from .interface_sdd import stated_sizes
from .interface_sides import Interfaces, request_inputs
from .matching import Call
from .run_context import RunContext
from .rundir import IntegrationFailure
from .sdd import normalize_path, path_matches
from .sdd_terms import terms

FindingKind = Literal[
    "path_differs", "field_missing", "fields_disagree", "status_differs", "status_unproduced", "limit_violated",
    "limits_disagree", "input_unspecified", "input_differs", "subject_differs",
    "nullable_differs", "measure_differs", "required_differs", "value_differs",
]  # fmt: skip
# A value's other names, where a standard gives it some (a byte-order mark is U+FEFF).
_ALIASES = {"\ufeff": ("BOM", "byte-order mark", "byte order mark")}


@dataclass(frozen=True)
class InterfaceFinding:
    kind: FindingKind
    category: TriageCategory
    blamed: tuple[str, ...]  # the units whose side disagrees (none for spec_ambiguous)
    endpoint: str  # "GET /parcels/{parcel_id}"
    subject: str  # the field, status, path, limit or input in question
    a_side: Side
    a: Quote
    a_says: str
    b_side: Side
    b: Quote
    b_says: str
    agree: tuple[Side, ...] = ()  # the other sides that say what a_side says
    with_b: tuple[Side, ...] = ()  # the other sides that say what b_side says

    @property
    def corroborated(self) -> bool:
        """A third side confirms where the disagreement lies."""
        return bool(self.agree or self.with_b)

    def shows(self) -> str:
        return (
            f"{self.kind}: {SIDE_NAMES[self.a_side]} ({self.a.rel}:{self.a.line}) says {self.a_says}{_also(self.agree)}; "
            f"{SIDE_NAMES[self.b_side]} ({self.b.rel}:{self.b.line}) says {self.b_says}{_also(self.with_b)}"
        )

    def as_dict(self) -> dict:
        return {
            "kind": self.kind,
            "category": self.category,
            "blamed": list(self.blamed),
            "endpoint": self.endpoint,
            "subject": self.subject,
            "a": {"side": self.a_side, "at": f"{self.a.rel}:{self.a.line}", "says": self.a_says},
            "b": {"side": self.b_side, "at": f"{self.b.rel}:{self.b.line}", "says": self.b_says},
            "agree": list(self.agree),
            "with_b": list(self.with_b),
            "shows": self.shows(),
        }


@dataclass(frozen=True)
class DistinguishingInput:
    """What the failing request has that a request which got the expected answer did not."""

    items: tuple[tuple[str, str], ...]  # (input name, value in the failing request)
    passing: Quote  # the trace line of the request that succeeded
    failing: Quote | None

    def names(self) -> list[str]:
        """Every spelling a reason may use for the input: its name, its value, a standard alias of the value."""
        out: list[str] = []
        for name, value in self.items:
            out += [name.removesuffix("'s type").removesuffix("'s marks").split(" ")[-1], *spellings(value)]
        return [x for x in out if len(x) >= 2]

    def describe(self) -> str:
        return ", ".join(f"{name} = {_shown(value)}" for name, value in self.items)


def _shown(value: str) -> str:
    """A value as a reason can show it: marks that are whitespace by their Unicode names."""
    if value and not value.strip():
        return " and ".join(unicodedata.name(c, f"U+{ord(c):04X}").lower() for c in value)
    return value


def compare(ctx: RunContext, failure: IntegrationFailure, calls: list[Call]) -> list[InterfaceFinding]:
    """The typed disagreements about the endpoints the failing step called, upstream calls first."""
    ifs = Interfaces(ctx)
    out: list[InterfaceFinding] = []
    for call in calls:
        if call.path is None or call.method is None:
            continue
        out += _paths(ifs, call, failure)
        out += _answered(ifs, call)
        out += _fields(ifs, call, failure)
    needed = failure.expected.status is not None and 200 <= failure.expected.status < 300
    for call in calls[:-1]:  # an upstream refusal the step needed to succeed, of a request within the SDD's limits
        if needed and call.path is not None and call.status is not None and 400 <= call.status < 500:
            out += _quantities(ifs, failure, call, expected=200)
    failing = calls[-1]
    if failing.path is not None:
        out += _quantities(ifs, failure, failing)
        out += _limits(ifs, ctx, failure, failing)
        out += _statuses(ifs, failure, failing)
    return out


# -- paths ----------------------------------------------------------------------------------------------------


def _paths(ifs: Interfaces, call: Call, failure: IntegrationFailure) -> list[InterfaceFinding]:
    """A call its provider answered 404 / 405 for: which side declares the called path, which another?"""
    if call.status not in (404, 405) or call.provider is None or call.failing:
        return []
    provider, m, path = call.provider, call.method, call.path or "/"
    sides = {side: ifs.of(side, provider, m, path) for side in ("spec", "contract", "code")}
    consumers = [op for op in ifs.of("consumer", provider, m, path) if op.unit in failure.involves]
    declared = {side: ops for side, ops in sides.items() if ops}
    # the template the call was made by (the SDD's, else the consumer's): a renamed route may share with it
    # only a parameter's place, which a concrete path does not show
    ref = declared["spec"][0].path if "spec" in declared else consumers[0].path if consumers else path
    others = {side: _other(ifs, side, provider, m, ref) for side in ("spec", "contract", "code")}
    at = _trace_quote(ifs, call)
    if consumers and not declared and others["spec"] is not None:
        right = others["spec"]
        agree = tuple(s for s in ("contract", "code") if _same_endpoint(others[s], right))
        return [_finding("path_differs", "contract_mismatch", (consumers[0].unit,), right, f"{right.method or m} {right.path}",
                         "spec", right.at, f"{provider} serves {right.method or m} {right.path}",
                         "consumer", consumers[0].at, f"{consumers[0].unit} calls {m} {consumers[0].path}", agree)]  # fmt: skip
    if "spec" in declared and "contract" not in declared and others["contract"] is not None:
        spec, contract = declared["spec"][0], others["contract"]
        return [_finding("path_differs", "contract_mismatch", (provider,), spec, f"{m} {spec.path}",
                         "spec", spec.at, f"{provider} serves {m} {spec.path}",
                         "contract", contract.at, f"{provider} serves {contract.method or m} {contract.path}",
                         ("consumer",) if consumers else (), ("code",) if others["code"] is not None and others["code"].template == contract.template else ())]  # fmt: skip
    parsed = bool(ifs.provided_by("code", provider, None))  # routes were found at all (a parsed framework)
    if "spec" in declared and "contract" in declared and "code" not in declared and parsed and at is not None:
        spec = declared["spec"][0]
        return [_finding("path_differs", "impl_bug", (provider,), spec, f"{m} {spec.path}",
                         "spec", spec.at, f"{provider} serves {m} {spec.path}", "trace", at,
                         f"{provider} answered {call.status}: no route of its code serves {m} {path}", ("contract",))]  # fmt: skip
    return []


def _same_endpoint(a: Operation | None, b: Operation) -> bool:
    return a is not None and (a.method, a.template) == (b.method, b.template)


def _other(ifs: Interfaces, side: str, provider: str, method: str | None, path: str) -> Operation | None:
    """What `side` says `provider` serves instead of (method, path): the closest path with that method, else the
    same path with another method (a renamed route, or a changed verb)."""
    closest = _closest(ifs.provided_by(side, provider, method), path)
    if closest is not None:
        return closest
    return next((op for op in ifs.of(side, provider, None, path) if op.method not in (None, method)), None)


def _rival_list(spec: Operation, status: int, name: str, have: set[str]) -> str | None:
    """A field of `have` that another SDD statement puts in `name`'s place: the two statements list the same
    answer (they share fields) and each has as many fields the other lacks — one says `name`, the other the
    field the provider returns. A statement that only adds fields ("it also carries `currency`") is no rival."""
    lists = spec.field_lists(status)
    for listing in (x for x in lists if name in x):
        for other in lists:
            mine, theirs = listing - other, other - listing
            swapped = sorted(theirs & have)
            if listing & other and name in mine and len(mine) == len(theirs) and swapped:
                return swapped[0]
    return None


def _closest(ops: list[Operation], path: str) -> Operation | None:
    """The operation whose template shares the most segments with `path` (same length first)."""
    segs = normalize_path(path).split("/")

    def score(op: Operation) -> tuple[int, int]:
        other = op.template.split("/")
        same = sum(a == b for a, b in zip(segs, other, strict=False))
        return (len(other) == len(segs), same)

    best = max(ops, key=score, default=None)
    return best if best is not None and score(best)[1] > 1 else None


# -- fields ---------------------------------------------------------------------------------------------------


def _fields(ifs: Interfaces, call: Call, failure: IntegrationFailure) -> list[InterfaceFinding]:
    """Fields of the answer the call got: the SDD's, the provider contract's, the consumers', the trace's."""
    if call.status is None or not isinstance(call.body, dict) or call.provider is None:
        return []
    provider, m, path, status = call.provider, call.method, call.path or "/", call.status
    got = set(field_paths(call.body))
    if call.failing and failure.expected.status not in (None, status):
        return []  # a status that differs says more than its body; `_statuses` reads it
    wanted = set(failure.expected.body) if call.failing and isinstance(failure.expected.body, dict) else None
    spec = _first(ifs.of("spec", provider, m, path))
    contract = _first(ifs.of("contract", provider, m, path))
    at = _trace_quote(ifs, call) or Quote(f"{ifs.ctx.run_rel}/result.json", 1)
    out: list[InterfaceFinding] = []
    spec_fields = spec.fields_for(status) if spec else {}
    contract_fields = contract.fields_for(status) if contract else {}
    ep = f"{m} {spec.path if spec else path}"
    for name, where in spec_fields.items():
        if name in got or (wanted is not None and name not in wanted) or _nested_in(name, got, spec_fields):
            continue
        rival = _rival_list(spec, status, name, set(contract_fields) or got) if spec else None
        if rival is not None and spec is not None:
            out.append(_finding("fields_disagree", "spec_ambiguous", (), spec, f"{name} / {rival}", "spec", where,
                                f"{ep} answers {status} with field {name}", "spec", spec_fields[rival],
                                f"{ep} answers {status} with field {rival} instead"))  # fmt: skip
            continue
        if contract_fields and name not in contract_fields:
            parent = name.rpartition(".")[0]  # the contract's own field in its place: a sibling first
            extra = sorted((f for f in contract_fields if f not in spec_fields and not name.startswith(f"{f}.")),
                           key=lambda f: f.rpartition(".")[0] != parent)  # fmt: skip
            c_at = contract_fields[extra[0]] if extra else contract.at  # type: ignore[union-attr]
            c_says = f"{provider}'s {status} answer has {', '.join(sorted(contract_fields))}"
            consumers = [op for op in ifs.of("consumer", provider, m, path) if name in op.fields_for(status)]
            out.append(_finding("field_missing", "contract_mismatch", (provider,), spec, name, "spec", where,
                                f"{ep} answers {status} with field {name}", "contract", c_at, c_says,
                                ("consumer",) if consumers else (), ("trace",) if got & set(extra) else ()))  # fmt: skip
        elif spec_fields:
            agree = ("contract",) if name in contract_fields else ()
            out.append(_finding("field_missing", "impl_bug", (provider,), spec, name, "spec", where,
                                f"{ep} answers {status} with field {name}", "trace", at,
                                f"{provider} answered {status} without {name} (fields: {', '.join(sorted(got)) or 'none'})",
                                agree))  # fmt: skip
    if out or call.failing:
        return out
    for consumer in ifs.of("consumer", provider, m, path):
        if consumer.unit not in failure.involves:
            continue
        for name, where in consumer.fields_for(status).items():
            if name not in got and name not in spec_fields and (spec_fields or contract_fields):
                basis, side = (spec, "spec") if spec_fields else (contract, "contract")
                fields = spec_fields or contract_fields
                # the trace confirms the SDD's answer; without the SDD it only shows what the provider does
                out.append(_finding("field_missing", "contract_mismatch", (consumer.unit or "?",), basis, name, side,  # type: ignore[arg-type]
                                    next(iter(fields.values())), f"{ep} answers {status} with {', '.join(sorted(fields))}",
                                    "consumer", where, f"{consumer.unit} reads field {name} from that answer",
                                    ("trace",) if spec_fields else ()))  # fmt: skip
    return out[:1]


def _nested_in(name: str, got: set[str], listed: dict[str, Quote]) -> bool:
    """A field the SDD lists by its own name that the answer carries inside an envelope the SDD does not list
    (`status` as `data.parcel.status`): the SDD names the field, not its path."""
    nested = [g for g in got if g.endswith(f".{name}")] if "." not in name else []
    return bool(nested) and not any(g.split(".")[0] in listed for g in nested)


# -- statuses and limits --------------------------------------------------------------------------------------


def _statuses(ifs: Interfaces, failure: IntegrationFailure, call: Call) -> list[InterfaceFinding]:
    expected, got = failure.expected.status, call.status
    if expected is None or got is None or expected == got or call.provider is None or got >= 500:
        return []
    provider, m, path = call.provider, call.method, call.path or "/"
    spec = _first([op for op in ifs.of("spec", provider, m, path) if expected in op.statuses])
    if spec is None:
        return []
    contract = _first(ifs.of("contract", provider, m, path))
    ep = f"{m} {spec.path}"
    if contract is not None and expected not in contract.statuses and contract.statuses:
        c_at = contract.statuses.get(got, contract.at)
        declared = "/".join(str(s) for s in sorted(contract.statuses))
        code = _first(ifs.of("code", provider, m, path))
        with_b = (("trace",) if got in contract.statuses else ()) + (("code",) if code and got in code.statuses else ())
        return [_finding("status_differs", "contract_mismatch", (provider,), spec, str(expected), "spec",
                         spec.statuses[expected], f"{ep} answers {expected}", "contract", c_at,
                         f"{provider} answers {declared} (not {expected})", (), with_b)]  # fmt: skip
    if _unstated_in_its_class(spec, got) and (contract is None or got not in contract.statuses):
        at = _trace_quote(ifs, call) or Quote(f"{ifs.ctx.run_rel}/result.json", 1)
        agree = ("contract",) if contract is not None else ()
        return [_finding("status_differs", "impl_bug", (provider,), spec, str(expected), "spec",
                         spec.statuses[expected], f"{ep} answers {expected} (and never {got})", "trace", at,
                         f"{provider} answered {got}", agree)]  # fmt: skip
    return []


def unproduced(ctx: RunContext, failure: IntegrationFailure, call: Call) -> InterfaceFinding | None:
    """The SDD and the provider's contract both state the status the case expects for the endpoint, and the
    endpoint's handler (read by its parser) can produce the status the run got but never the expected one:
    whatever situation the SDD ties that status to, the code cannot answer it."""
    expected, got = failure.expected.status, call.status
    if expected is None or got is None or got >= 500 or call.provider is None or call.method is None:
        return None
    ifs = Interfaces(ctx)
    provider, m, path = call.provider, call.method, call.path or "/"
    spec = _first([op for op in ifs.of("spec", provider, m, path) if expected in op.statuses])
    contract = _first([op for op in ifs.of("contract", provider, m, path) if expected in op.statuses])
    code = _first([op for op in ifs.of("code", provider, m, path) if got in op.statuses])
    if spec is None or contract is None or code is None or expected in code.statuses:
        return None
    produced = "/".join(str(s) for s in sorted(code.statuses))
    return _finding("status_unproduced", "impl_bug", (provider,), spec, str(expected), "spec", spec.statuses[expected],
                    f"{m} {spec.path} answers {expected}", "code", code.at,
                    f"{provider}'s handler for {m} {spec.path} produces {produced}, never {expected}", ("contract",))  # fmt: skip


def _answered(ifs: Interfaces, call: Call) -> list[InterfaceFinding]:
    """An upstream call answered with a status the SDD never states for its endpoint: the provider's contract
    states it too (contract_mismatch), or does not (impl_bug)."""
    got = call.status
    if call.failing or got is None or got >= 500 or got in (404, 405) or call.provider is None:
        return []
    provider, m, path = call.provider, call.method, call.path or "/"
    specs = [op for op in ifs.of("spec", provider, m, path) if op.statuses]
    spec, contract = _first(specs), _first(ifs.of("contract", provider, m, path))
    if spec is None or contract is None or not all(_unstated_in_its_class(op, got) for op in specs):
        return []  # "never states" holds for every statement of the endpoint (two documents may differ)
    at = _trace_quote(ifs, call) or contract.at
    stated = "/".join(str(s) for s in sorted(spec.statuses))
    first = next(at for s, at in sorted(spec.statuses.items()) if s // 100 == got // 100)  # the same class's line
    if got in contract.statuses:
        return [_finding("status_differs", "contract_mismatch", (provider,), spec, str(got), "spec", first,
                         f"{m} {spec.path} answers {stated}", "contract", contract.statuses[got],
                         f"{provider} answers {got}", (), ("trace",))]  # fmt: skip
    return [_finding("status_differs", "impl_bug", (provider,), spec, str(got), "spec", first,
                     f"{m} {spec.path} answers {stated}", "trace", at, f"{provider} answered {got}",
                     ("contract",))]  # fmt: skip


def _unstated_in_its_class(spec: Operation, status: int) -> bool:
    """The SDD states the endpoint's answers of `status`'s class (2xx, 4xx) and `status` is not one of them.
    An SDD that names only an endpoint's refusals says nothing against a success status, and vice versa."""
    return status not in spec.statuses and any(s // 100 == status // 100 for s in spec.statuses)


def _limits(ifs: Interfaces, ctx: RunContext, failure: IntegrationFailure, call: Call) -> list[InterfaceFinding]:
    """The SDD's "at most N ... beyond that S" against the number of calls the case made to the endpoint."""
    expected, got = failure.expected.status, call.status
    if expected is None or got is None or not 200 <= got < 300 or call.provider is None:
        return []
    provider, m, path = call.provider, call.method, call.path or "/"
    for spec in ifs.of("spec", provider, m, path):
        made = [
            (line, e)
            for line, e in ctx.trace
            if e.case == failure.case
            and e.step <= failure.step
            and e.method == m
            and spec.serves(m, urlsplit(e.url).path or "/")
        ]  # fmt: skip  (the calls the case made to the endpoint, whatever their path parameters)
        allowed = [e for _line, e in made[:-1] if e.status is not None and 200 <= e.status < 300]
        for limit in spec.limits:  # a count of calls: the ones up to the limit succeeded, the one past it must not
            if limit.status == expected and len(made) > limit.count and len(allowed) >= limit.count:
                contract = _first(ifs.of("contract", provider, m, path))
                blamed_contract = contract is not None and expected not in contract.statuses
                at = Quote(f"{ctx.run_rel}/http-trace.ndjson", made[-1][0])
                return [_finding("limit_violated", "contract_mismatch" if blamed_contract else "impl_bug", (provider,),
                                 spec, f"at most {limit.count}", "spec", limit.at,
                                 f"{m} {spec.path} allows {limit.count} and answers {limit.status} beyond",
                                 "trace", at, f"call {len(made)} of case {failure.case} was answered {got}",
                                 () if blamed_contract or contract is None else ("contract",))]  # fmt: skip
    return []


def _quantities(
    ifs: Interfaces, failure: IntegrationFailure, call: Call, expected: int | None = None
) -> list[InterfaceFinding]:
    """The SDD's limits on a quantity of a request (size, length, number) against the request's own; `expected` is
    what the call had to answer (the failing step's expectation when it is the failing call)."""
    upstream = expected is not None
    expected, got = failure.expected.status if expected is None else expected, call.status
    if expected is None or got is None or call.provider is None or got >= 500:
        return []
    refused_ok = 400 <= expected < 500 and 200 <= got < 300  # accepted what the case wanted refused
    accepted_no = 200 <= expected < 300 and 400 <= got < 500  # refused what the case wanted accepted
    if not (refused_ok or accepted_no):
        return []
    provider, m, path = call.provider, call.method, call.path or "/"
    at = _trace_quote(ifs, call) or Quote(f"{ifs.ctx.run_rel}/result.json", 1)
    groups: dict[tuple[str, str], list[tuple[Limit, Operation, float, bool]]] = {}
    for spec in ifs.of("spec", provider, m, path):
        for limit in spec.limits:
            if limit.unit_wide and not _about(limit.statement, spec.template):
                continue  # a rule for the unit's other resources ("exports up to 10 MB"), not this endpoint's
            measured = _measured(limit, _with_query(ifs, call), None) if upstream else _measured(limit, call, failure)
            if measured is None:
                continue
            name, low, high = measured
            allowed = limit.allows(low)
            if allowed is not None and limit.allows(high) == allowed:
                groups.setdefault((limit.measure, name), []).append((limit, spec, high, allowed))
    for (_measure, name), found in groups.items():
        spec, q = found[0][1], found[0][2]
        ep = f"{m} {spec.path}"
        has = {"bytes": f"{name} = {number_text(q)} bytes", "length": f"{name} of {number_text(q)} characters"}.get(
            _measure, f"{name} = {number_text(q)}"
        )
        yes = [x[0] for x in found if x[3]]
        no = [x[0] for x in found if not x[3]]
        pair = next(((a, b) for b in no for a in yes if a.bound == b.bound), None)
        if pair is not None:  # the same side of the quantity bounded twice, the request between the two
            a, b = pair
            return [_finding("limits_disagree", "spec_ambiguous", (), spec, f"{name} {a.says()} / {b.says()}",
                             "spec", a.at, f"{ep} allows {a.says()} (so {has} is allowed)", "spec", b.at,
                             f"{ep} allows {b.says()} (so {has} is not)")]  # fmt: skip
        limit = (no or yes)[0]
        contract = _first(ifs.of("contract", provider, m, path))
        if refused_ok and no:
            blamed_contract = contract is not None and bool(contract.statuses) and expected not in contract.statuses
            return [_finding("limit_violated", "contract_mismatch" if blamed_contract else "impl_bug", (provider,),
                             spec, f"{name} {limit.says()}", "spec", limit.at,
                             f"{ep} allows {limit.says()}", "trace", at,
                             f"the request with {has} was answered {got}",
                             () if blamed_contract or contract is None else ("contract",))]  # fmt: skip
        if accepted_no and not no:  # a refusal may have another reason than the limit: never corroborated
            return [_finding("limit_violated", "impl_bug", (provider,), spec, f"{name} {limit.says()}", "spec",
                             limit.at, f"{ep} allows {limit.says()}", "trace", at,
                             f"the request with {has}, within that limit, was answered {got}")]  # fmt: skip
    return []


def _with_query(ifs: Interfaces, call: Call) -> Call:
    """The call with the query string its trace entry sent (a call's path is the route's, without it)."""
    entry = dict(ifs.ctx.trace).get(call.trace_line) if call.trace_line is not None else None
    query = urlsplit(entry.url).query if entry is not None else ""
    return replace(call, path=f"{call.path}?{query}") if query else call


def _measured(limit: Limit, call: Call, failure: IntegrationFailure | None) -> tuple[str, float, float] | None:
    """(input name, smallest and largest reading of the quantity) of a request for `limit`: its size
    (Content-Length, a text body, else the size the case's description states), or the length or number of an
    input the limit's statement names. `failure` is the case's own request when `call` is the failing one."""
    body = call.request_body
    if body is None and failure is not None and failure.request:
        body = failure.request.body
    if limit.measure == "bytes" and failure is None:
        return None  # an upstream call's size is not the case's
    if limit.measure == "bytes":
        headers = {k.lower(): v for k, v in {**(failure.request.headers if failure.request else {}),
                                              **(call.headers or {})}.items()}  # fmt: skip
        size = str(headers.get("content-length", "")).strip()
        if size.isdigit():
            return "Content-Length", float(size), float(size)
        if isinstance(body, str):
            return "the request body's size", float(len(body.encode())), float(len(body.encode()))
        stated = stated_sizes(failure.description)
        return ("the size the case states", *stated[0]) if len(stated) == 1 else None
    inputs: dict[str, object] = {k: _as_number(v) for k, v in parse_qsl(urlsplit(call.path or "").query)}
    inputs.update({str(k): v for k, v in body.items()} if isinstance(body, dict) else {})  # a JSON "2" is no number
    sentence = _sentence_of(limit.statement, limit.written)
    for name, value in inputs.items():
        if not _named(sentence, name):
            continue
        if limit.measure == "length" and isinstance(value, str):
            return name, float(len(value)), float(len(value))
        if limit.measure in ("value", "count") and isinstance(value, int | float) and not isinstance(value, bool):
            return name, float(value), float(value)
    return None


def _about(statement: str, template: str) -> bool:
    """A statement outside any endpoint speaks of this one when it names a resource of its path (`/profiles/{u}/
    avatar` and "profile images (avatars and banners)")."""
    resources = terms(" ".join(seg for seg in template.split("/") if seg and not seg.startswith(("{", "<", ":"))))
    return bool(resources & terms(statement))


def _sentence_of(statement: str, written: str) -> str:
    """The sentence (or table cell) of `statement` that states the limit: the input it limits is named there."""
    for sentence in re.split(r"(?<=[.;!?|])\s+|\n", statement):
        if written and written in sentence:
            return sentence
    return statement


def _named(statement: str, name: str) -> bool:
    spellings = {name, name.replace("_", " "), name.replace("_", "-")}
    return any(re.search(rf"(?<![\w]){re.escape(x)}(?:s|es)?(?![\w])", statement, re.IGNORECASE) for x in spellings)


def _as_number(text: str) -> float | str:
    """A query parameter's value: a number when it reads as one (a query has no types), else the text."""
    try:
        return float(text)
    except ValueError:
        return text


# -- the input that distinguishes the failing request ---------------------------------------------------------


def distinguishing_input(ctx: RunContext, failure: IntegrationFailure, call: Call) -> DistinguishingInput | None:
    """The request inputs by which the failing call differs from the closest traced call to the same endpoint that
    got the answer the case expected; None when the trace holds no such call."""
    expected = failure.expected.status
    if call.path is None or expected is None or expected == call.status:
        return None
    failing_line = call.trace_line
    failing_entry = next((e for line, e in ctx.trace if line == failing_line), None)
    url = failing_entry.url if failing_entry else call.path
    mine = request_inputs(url, call.headers, call.request_body)
    best: tuple[int, tuple, int] | None = None
    for line, e in ctx.trace:
        if line == failing_line or e.status != expected or e.method != call.method:
            continue
        if not path_matches(call.path, urlsplit(e.url).path or "/"):
            continue
        theirs = request_inputs(e.url, e.request_headers, e.request_body)
        # a body field's value differs between any two cases by design; its type, or any other input, does not
        diff = tuple((k, v) for k, v in mine.items() if theirs.get(k) != v and not _is_body_value(k))
        if diff and (best is None or len(diff) < best[0]):
            best = (len(diff), diff, line)
    if best is None:
        return None
    trace_rel = f"{ctx.run_rel}/http-trace.ndjson"
    return DistinguishingInput(
        best[1], Quote(trace_rel, best[2]), Quote(trace_rel, failing_line) if failing_line else None
    )


def _is_body_value(name: str) -> bool:
    return name.startswith("body field ") and not name.endswith(("'s type", "'s marks"))


def input_unspecified(ctx: RunContext, failure: IntegrationFailure, call: Call,
                      found: DistinguishingInput) -> InterfaceFinding | None:  # fmt: skip
    """`found` names inputs none of whose values the SDD mentions: the SDD does not say what they should do."""
    sdd = "\n".join(d.text for d in ctx.sdd_docs).lower()
    values = [v for _n, v in found.items]
    if any(_mentions(sdd, alias) for v in values for alias in spellings(v)):
        return None
    ep = f"{call.method} {call.path}"
    return InterfaceFinding(
        "input_unspecified", "spec_ambiguous", (), ep, found.describe(), "trace", found.passing,
        f"a request without {found.describe()} got {failure.expected.status}", "trace", found.failing or found.passing,
        f"the failing request, with {found.describe()}, got {call.status}; the SDD never mentions that input",
    )  # fmt: skip


def spellings(value: str) -> list[str]:
    """How a text may name an input value: the value itself when it has letters or digits, the Unicode names of
    a code point (`U+FEFF`) or of punctuation (`;` → "semicolon"), and a standard's other names for it."""
    value = value.strip("'\"")
    chars = [chr(int(value[2:], 16))] if value.startswith("U+") and len(value) > 2 else list(value)
    if any(c.isalnum() for c in chars) and not value.startswith("U+"):
        return [value]
    out = [value] if value.startswith("U+") else []
    for c in chars:
        out += [unicodedata.name(c, "").lower(), *_ALIASES.get(c, ())]
    return [x for x in out if x]


def _mentions(text: str, value: str) -> bool:
    value = value.lower()
    if not value:
        return False
    return re.search(rf"(?<![\w]){re.escape(value)}(?![\w])", text) is not None


# -- helpers --------------------------------------------------------------------------------------------------


def _finding(kind: FindingKind, category: TriageCategory, blamed: tuple[str, ...], op: Operation, subject: str,
             a_side: Side, a: Quote, a_says: str, b_side: Side, b: Quote, b_says: str,
             agree: tuple[Side, ...] = (), with_b: tuple[Side, ...] = ()) -> InterfaceFinding:  # fmt: skip
    return InterfaceFinding(kind, category, blamed, f"{op.method or '*'} {op.path}", subject, a_side, a, a_says,
                            b_side, b, b_says, agree, with_b)  # fmt: skip


finding_between = _finding  # for the other comparisons of the interface model


def _also(sides: tuple[Side, ...]) -> str:
    return f" (confirmed by {' and '.join(SIDE_NAMES[s] for s in sides)})" if sides else ""


def _first(ops: list[Operation]) -> Operation | None:
    return ops[0] if ops else None


def _trace_quote(ifs: Interfaces, call: Call) -> Quote | None:
    return Quote(f"{ifs.ctx.run_rel}/http-trace.ndjson", call.trace_line) if call.trace_line else None


__all__ = [
    "DistinguishingInput", "InterfaceFinding", "compare", "distinguishing_input", "finding_between", "input_unspecified",
    "unproduced",
]  # fmt: skip
