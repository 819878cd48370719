"""Coverage of acceptance criteria and contract status codes by test names.

Mapping (documented in docs/tester.md):

* a test covers criterion `AC3` when its name contains the token `ac3` (case-insensitive,
  not glued to letters or digits): `test_ac3_wall_hit`, `it("AC3: wall hit")`;
* a test covers status code 404 when its name contains `http404` (`test_http404_unknown_id`);
  500 is never required (a 500 is a bug, not a feature a test should ask for).

acceptance_coverage = covered criteria / all criteria; contract_coverage = covered
status codes / all declared codes except 500 (1.0 when none are declared).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..units import Contract, UnitSpec, criterion_token, status_token

NEGATIVE_WORDS = ("neg", "negative", "invalid", "reject", "rejects", "rejected", "not", "no", "never", "error",
                  "fails", "wrong", "bad", "missing", "empty", "outside", "beyond", "over", "off")  # fmt: skip


def required_statuses(contract: Contract | None) -> list[int]:
    if contract is None:
        return []
    codes = {code for endpoint in contract.exports.http for code in endpoint.responses}
    return sorted(c for c in codes if c != 500)


def acceptance(spec: UnitSpec, test_names: Iterable[str]) -> tuple[float, list[str]]:
    names = list(test_names)
    missing = [c.id for c in spec.acceptance_criteria if not any(criterion_token(c.id).search(n) for n in names)]
    total = len(spec.acceptance_criteria)
    return (total - len(missing)) / total, missing


def contract(contract_: Contract | None, test_names: Iterable[str]) -> tuple[float, list[int]]:
    names = list(test_names)
    codes = required_statuses(contract_)
    if not codes:
        return 1.0, []
    missing = [c for c in codes if not any(status_token(c).search(n) for n in names)]
    return (len(codes) - len(missing)) / len(codes), missing


def is_negative(test_name: str) -> bool:
    """A negative case names a rejection / failure / boundary (`test_ac2_neg_...`, `test_http400_...`)."""
    import re

    words = set(re.split(r"[^a-z0-9]+", test_name.lower()))
    return bool(words & set(NEGATIVE_WORDS)) or any(w.startswith("http4") for w in words)


def criteria_without_negative(spec: UnitSpec, test_names: Iterable[str]) -> list[str]:
    names = list(test_names)
    return [
        c.id
        for c in spec.acceptance_criteria
        if not any(criterion_token(c.id).search(n) and is_negative(n) for n in names)
    ]
