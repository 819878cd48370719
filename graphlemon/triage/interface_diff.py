"""Structural comparison of the interface model: SDD vs provider contract vs consumer contract vs code vs trace.

Each disagreement is a typed `InterfaceFinding` with the two lines that disagree. The category follows from
which sides agree (the decision flow, docs/triage.md): the SDD and the implementation's contract agree and the run did otherwise
→ `impl_bug`; a contract.json disagrees with the SDD (or a consumer's with its provider and the SDD) →
`contract_mismatch` for that contract's unit; two SDD statements that say it two ways → `spec_ambiguous`.

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
                     past the limit answered with success;
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

from ..models import TriageCategory
from .interface import SIDE_NAMES, Operation, Quote, Side, field_paths
from .interface_sides import Interfaces
from .run_context import RunContext
from .rundir import IntegrationFailure
from .sdd import normalize_path
from .steps import Call

FindingKind = Literal[
    "path_differs", "field_missing", "fields_disagree", "status_differs", "status_unproduced", "limit_violated",
]  # fmt: skip


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
    failing = calls[-1]
    if failing.path is not None:
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


# -- helpers --------------------------------------------------------------------------------------------------


def _finding(kind: FindingKind, category: TriageCategory, blamed: tuple[str, ...], op: Operation, subject: str,
             a_side: Side, a: Quote, a_says: str, b_side: Side, b: Quote, b_says: str,
             agree: tuple[Side, ...] = (), with_b: tuple[Side, ...] = ()) -> InterfaceFinding:  # fmt: skip
    return InterfaceFinding(kind, category, blamed, f"{op.method or '*'} {op.path}", subject, a_side, a, a_says,
                            b_side, b, b_says, agree, with_b)  # fmt: skip


def _also(sides: tuple[Side, ...]) -> str:
    return f" (confirmed by {' and '.join(SIDE_NAMES[s] for s in sides)})" if sides else ""


def _first(ops: list[Operation]) -> Operation | None:
    return ops[0] if ops else None


def _trace_quote(ifs: Interfaces, call: Call) -> Quote | None:
    return Quote(f"{ifs.ctx.run_rel}/http-trace.ndjson", call.trace_line) if call.trace_line else None
