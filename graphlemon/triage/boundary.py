"""An answer that lacks exactly the item lying on a bound of the request.

The case expected a list item the answer lacks, and one of that item's values equals a value the request sent
(`picked_on` = the `to` query parameter): the item sits on the request's bound, and the two sides differ on
whether the bound is included. Structure finds the item and the bound; which reading holds is what the SDD or
the provider's contract says about the endpoint's bounds: "inclusive" / "included" → the code that leaves the
item out departs from it (impl_bug); nothing said → a person decides (spec_ambiguous).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlsplit

from .matching import Call
from .rundir import IntegrationFailure

# the words that say a range includes its ends (a statement about bounds, not about a case)
INCLUSIVE = re.compile(r"\binclu(?:sive|ded|ding)\b|\bboth (?:ends|days|dates|bounds|limits)\b", re.IGNORECASE)
_MAX_ITEMS = 1000  # a longer list is not searched


@dataclass(frozen=True)
class Boundary:
    field: str  # the answer's list ("harvests")
    item: dict  # the expected item the answer lacks
    key: str  # the item's field whose value is the bound ("picked_on")
    input: str  # the request input that sent it ("query to")
    value: str  # the bound's value

    def describe(self) -> str:
        return f"the {self.field} item with {self.key} = {self.value}, which is the request's {self.input}"


def boundary_item(failure: IntegrationFailure, call: Call) -> Boundary | None:
    """The expected list item the answer lacks whose value equals a value the request sent."""
    expected, got = failure.expected.body, call.body
    if not isinstance(expected, dict) or not isinstance(got, dict):
        return None
    inputs = _inputs(failure, call)
    for name, want in expected.items():
        have = got.get(name)
        if not isinstance(want, list) or not isinstance(have, list) or len(want) > _MAX_ITEMS:
            continue
        missing = [x for x in want if isinstance(x, dict) and x not in have]
        if len(missing) != 1 or len(want) - len(have) != 1:
            continue  # one item more, no other difference: the list was cut at one end
        for key, value in missing[0].items():
            bound = next((i for i, v in inputs.items() if isinstance(value, str | int | float) and str(value) == v), None)
            if bound is not None:
                return Boundary(name, missing[0], key, bound, str(value))
    return None


def _inputs(failure: IntegrationFailure, call: Call) -> dict[str, str]:
    path = (failure.request.path if failure.request else None) or call.path or ""
    out = {f"query {k}": v for k, v in parse_qsl(urlsplit(path).query)}
    body = failure.request.body if failure.request else None
    if isinstance(body, dict):
        out.update({f"body field {k}": str(v) for k, v in body.items() if isinstance(v, str | int | float)})
    return {k: v for k, v in out.items() if v}


__all__ = ["INCLUSIVE", "Boundary", "boundary_item"]
