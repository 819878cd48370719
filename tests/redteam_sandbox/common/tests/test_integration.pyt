"""Integration cases from .graphlemon/integration/spec.json (case id in each test name)."""

from calc.core import add, mul


def test_add_then_mul():
    assert mul(add(1, 2), 3) == 9
