"""Consumer or provider: which side of an upstream call departs from the agreed interface.

A consumer's contract.json (`consumes`) does not accept what its provider answered. That alone says the two
contracts disagree, not which one is wrong. The agreed interface is the SDD's statement of the endpoint; the
two contracts are compared with it by structure — the statuses each side states for the endpoint:

- the provider answered a status the SDD states and the consumer does not accept         → the consumer departs;
- the SDD states a status of the answered one's class that the consumer awaits and the
  provider's contract lacks (the provider answers 400 where the SDD and the consumer say 409) → the provider departs;
- both at once (the SDD states the answered status and the one the provider lacks): the provider, since its
  contract lacks what the SDD requires, but below the auto-apply bar — which statement fits the situation is
  not a question of structure;
- no SDD statement about the endpoint, or two SDD statements that give its answers of that class differently:
  there is no agreed interface to judge by, and the verdict names the doubt instead of guessing.

A consumer need not accept every status the SDD states (it handles the answers its own requests can get); a
provider must be able to give every status the SDD states. That asymmetry is why a consumer that awaits a
subset of the SDD's statuses agrees with the SDD, and a provider that lacks one departs from it.
"""

from __future__ import annotations

from dataclasses import dataclass

from .interface import Operation, Quote
from .interface_diff import InterfaceFinding, finding_between
from .interface_sides import Interfaces
from .matching import Call
from .run_context import RunContext
from .rundir import IntegrationFailure


@dataclass(frozen=True)
class SideCheck:
    """The side that departs (`finding`), or why none can be named (`doubt`)."""

    finding: InterfaceFinding | None = None
    doubt: str | None = None


def consumer_or_provider(ctx: RunContext, call: Call, consumer: Operation) -> SideCheck:
    """Judge a consumer that does not accept the status `call` got, against its provider and the SDD."""
    got, provider, m, path = call.status, call.provider, call.method, call.path or "/"
    if got is None or provider is None or consumer.unit is None:
        return SideCheck(doubt="the call has no status or no provider to compare")
    ifs = Interfaces(ctx)
    ep = f"{m} {consumer.path}"
    contract = next(iter(ifs.of("contract", provider, m, path)), None)
    if contract is None:
        return SideCheck(doubt=f"{provider}'s contract.json does not state {ep}: no provider side to compare")
    specs = [op for op in ifs.of("spec", provider, m, path) if op.statuses]
    if not specs:
        return SideCheck(doubt=f"the SDD states no answer of {ep}: no agreed interface to judge the two contracts by")
    classes = {frozenset(s for s in op.statuses if s // 100 == got // 100) for op in specs}
    if len(classes) > 1:
        return SideCheck(doubt=f"the SDD's statements of {ep} give its {got // 100}xx answers differently")
    stated = {s: at for op in specs for s, at in op.statuses.items()}
    spec = specs[0]
    lacking = sorted(
        s for s in stated if s in consumer.statuses and s not in contract.statuses and s // 100 == got // 100
    )
    consumer_departs = got in stated and got in contract.statuses
    trace = Quote(f"{ctx.run_rel}/http-trace.ndjson", call.trace_line) if call.trace_line else None
    declared = "/".join(str(s) for s in sorted(contract.statuses))
    if lacking:
        want = lacking[0]
        code = next(iter(ifs.of("code", provider, m, path)), None)
        with_b = (("trace",) if got in contract.statuses and trace else ()) + (
            ("code",) if code is not None and got in code.statuses and want not in code.statuses else ()
        )
        also = f"; the SDD states {got} as well" if consumer_departs else ""
        found = finding_between(
            "status_differs", "contract_mismatch", (provider,), spec, str(want),
            "spec", stated[want], f"{ep} answers {want} (which {consumer.unit} awaits){also}",
            "contract", contract.statuses.get(got, contract.at), f"{provider} answers {declared} (not {want})",
            () if consumer_departs else ("consumer",), () if consumer_departs else with_b,
        )  # fmt: skip
        return SideCheck(found)
    if consumer_departs:
        accepted = "/".join(str(s) for s in sorted(consumer.statuses))
        found = finding_between(
            "status_differs", "contract_mismatch", (consumer.unit,), spec, str(got),
            "spec", stated[got], f"{ep} answers {got}",
            "consumer", consumer.at, f"{consumer.unit} accepts only {accepted} from {provider}",
            ("contract",) + (("trace",) if trace else ()),
        )  # fmt: skip
        return SideCheck(found)
    return SideCheck(doubt=f"the SDD states no {got // 100}xx answer of {ep} that either contract departs from")


def side_checks(ctx: RunContext, failure: IntegrationFailure, calls: list[Call]) -> list[SideCheck]:
    """Every upstream call of the step answered with a status that a consumer in the case does not accept, judged."""
    ifs = Interfaces(ctx)
    out = []
    for call in calls[:-1]:
        if call.status is None or call.provider is None or call.path is None:
            continue
        for consumer in ifs.of("consumer", call.provider, call.method, call.path):
            if consumer.unit in failure.involves and consumer.statuses and call.status not in consumer.statuses:
                out.append(consumer_or_provider(ctx, call, consumer))
    return out


__all__ = ["SideCheck", "consumer_or_provider", "side_checks"]
