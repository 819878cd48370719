"""Core arithmetic (SDD 3.1)."""

from calc.core import add, mul


def test_ac1_add():
    assert add(2, 3) == 5
    assert add(-1, 1) == 0


def test_ac2_mul():
    assert mul(2, 3) == 6
    assert mul(-2, 3) == -6
